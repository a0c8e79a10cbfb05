import Foundation
import StateKit

/// Where the tour keeps its data, so a second run shows the first run's values.
let persistenceTourDirectory = FileManager.default.temporaryDirectory
    .appendingPathComponent("statekit-demo/persistence", isDirectory: true)

enum TourTheme: String, Codable, Sendable {
    case light, dark
}

/// Window settings as release 2 stores them; release 1 stored only `{"width": …}`.
struct TourWindow: VersionedValue, Sendable {
    static let schemaVersion = 2
    var width: Int
    var height: Int

    static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> TourWindow {
        struct Release1: Decodable { var width: Int }
        return TourWindow(width: try Release1(from: decoder).width, height: 600)
    }
}

final class TourSettings {
    @Persisted(key: "theme", storage: .file(persistenceTourDirectory)) var theme = TourTheme.light
}

let persistenceSection = TourSection(
    name: "persistence",
    summary: "state that survives restarts, crashes and bad data"
) {
    let storage = FileStateStorage.file(persistenceTourDirectory)
    print("data directory: \(persistenceTourDirectory.path) (run the tour again to see these values loaded)")

    let launches = PersistedState(0, key: "launches", storage: storage)
    print("launches before this one: \(launches.value)")
    launches.modify { $0 += 1 }

    let settings = TourSettings()
    print("@Persisted theme loaded: \(settings.theme)")
    settings.theme = settings.theme == .light ? .dark : .light
    print("theme is now \(settings.theme); the next run loads it")

    let counter = PersistedState(0, key: "counter", storage: storage)
    let start = counter.value
    for _ in 0..<10_000 { counter.modify { $0 += 1 } }
    counter.flush()
    let onDisk = String(decoding: try storage.load(forKey: "counter") ?? Data(), as: UTF8.self)
    print("10,000 changes from \(start): counter.json now holds \(onDisk) (saves coalesce off this thread)")

    try storage.save(Data(#"{"schemaVersion":1,"value":{"width":800}}"#.utf8), forKey: "window")
    let window = PersistedState(TourWindow(width: 0, height: 0), key: "window", storage: storage)
    print("a release-1 window {width: 800} migrated to \(window.value)")

    try storage.save(Data("{not json".utf8), forKey: "profile")
    print("a corrupt profile.json; loading it reports a diagnostic (the tour's handler prints it here):")
    let profile = PersistedState(["name": "default"], key: "profile", storage: storage)
    print("profile started from its default: \(profile.value); the bytes were kept aside:")
    for name in try FileManager.default.contentsOfDirectory(atPath: persistenceTourDirectory.path).sorted()
    where name.hasPrefix("profile.corrupt-") {
        print("  \(name)")
        try FileManager.default.removeItem(at: persistenceTourDirectory.appendingPathComponent(name))
    }

    let defaults = UserDefaults(suiteName: "statekit-demo") ?? .standard
    let isTouchIDEnabled = UserDefaultsState(false, key: "isTouchIDEnabled", defaults: defaults)
    print("UserDefaultsState isTouchIDEnabled loaded: \(isTouchIDEnabled.value)")
    isTouchIDEnabled.modify { $0.toggle() }
    print("toggled; UserDefaults now says \(defaults.bool(forKey: "isTouchIDEnabled"))")

    isTouchIDEnabled.flush()
    launches.flush()
    settings.$theme.flush()
    runOneLiveValueTour()
}

/// Two models on one key share one value, and a change written outside the process arrives.
private func runOneLiveValueTour() {
    let storage = FileStateStorage.file(persistenceTourDirectory)
    let window = PersistedState("", key: "note", storage: storage)
    let preview = PersistedState("", key: "note", storage: storage)
    let arrived = DispatchSemaphore(value: 0)
    let subscription = preview.subscribe { note in
        print("  the preview hears: \"\(note)\"")
        if note == "written outside the containers" { arrived.signal() }
    }
    window.modify("typed in the window")
    print("two models on the key 'note': the window wrote, the preview reads \"\(preview.value)\"")
    window.flush()
    let file = persistenceTourDirectory.appendingPathComponent("note.json")
    try? Data(#""written outside the containers""#.utf8).write(to: file, options: .atomic)
    let seen = arrived.wait(timeout: .now() + 5) == .success
    print(
        "note.json replaced, as another process or a sync tool would; the window now reads \"\(window.value)\"\(seen ? "" : " (not seen within 5 s)")"
    )
    subscription.cancel()
}
