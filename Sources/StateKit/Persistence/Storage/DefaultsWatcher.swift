import Dispatch
import Foundation

/// Tells persisted containers when `UserDefaults` may have changed outside them: other code in
/// this process, another `UserDefaults` instance, another process.
///
/// `UserDefaults` posts no notification on Linux, and none for other processes anywhere, so one
/// timer for the whole process checks every watched key twice a second (each container compares
/// what the key holds with what it last wrote or read). On Linux it first synchronizes each
/// watched instance, which reads what other processes wrote. It also checks, once per suite,
/// that the suite's property-list file on disk can be read: Foundation on Linux silently replaces
/// an unreadable one with an empty one, so StateKit keeps a copy of it aside and reports it.
final class DefaultsWatcher: Sendable {
    static let shared = DefaultsWatcher()
    /// How often keys are checked: the bound on how late an outside change arrives.
    static let interval = DispatchTimeInterval.milliseconds(500)

    /// Keeps a key watched until released.
    final class Token {
        fileprivate let id: Int
        fileprivate weak var watcher: DefaultsWatcher?

        fileprivate init(id: Int, watcher: DefaultsWatcher) {
            self.id = id
            self.watcher = watcher
        }

        deinit { watcher?.remove(id) }
    }

    private struct Watch {
        let defaults: UncheckedSendable<UserDefaults>
        let onChange: @Sendable () -> Void
    }

    private struct Watches {
        var byID: [Int: Watch] = [:]
        var nextID = 0
        var checkedSuites: Set<String> = []
        /// Runs while any key is watched. A dispatch source may be used from any thread.
        var timer: UncheckedSendable<any DispatchSourceTimer>?
    }

    private let watches = LockedBox(Watches())

    /// Calls `onChange` twice a second while the token lives.
    func watch(
        _ defaults: UserDefaults,
        suite: String,
        key: String,
        onChange: @escaping @Sendable () -> Void
    ) -> AnyObject {
        let (token, isNewSuite) = watches.withLock { watches in
            watches.nextID += 1
            watches.byID[watches.nextID] = Watch(defaults: UncheckedSendable(defaults), onChange: onChange)
            if watches.timer == nil { watches.timer = UncheckedSendable(startTimer()) }
            return (Token(id: watches.nextID, watcher: self), watches.checkedSuites.insert(suite).inserted)
        }
        if isNewSuite { DefaultsFileCheck.check(suite: suite, key: key) }
        return token
    }

    private func remove(_ id: Int) {
        watches.withLock { watches in
            watches.byID[id] = nil
            if watches.byID.isEmpty {
                watches.timer?.value.cancel()
                watches.timer = nil
            }
        }
    }

    /// A running timer that checks the watched keys every ``interval``.
    private func startTimer() -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        return timer
    }

    private func tick() {
        let current = watches.withLock { Array($0.byID.values) }
        #if !canImport(Darwin)
        var synchronized: Set<ObjectIdentifier> = []
        for watch in current where synchronized.insert(ObjectIdentifier(watch.defaults.value)).inserted {
            watch.defaults.value.synchronize()
        }
        #endif
        for watch in current { watch.onChange() }
    }
}

/// Checks a suite's property-list file where Foundation on Linux keeps it.
enum DefaultsFileCheck {
    /// Reports a ``StateDiagnostic/Kind/storageFailed`` naming `key` when the suite's file exists
    /// but is not a readable property list, after copying it aside
    /// (`<suite>.plist.corrupt-<time>`), since Foundation will overwrite it.
    static func check(suite: String, key: String) {
        #if !canImport(Darwin)
        let name = suite == "standard" ? ProcessInfo.processInfo.processName : suite
        let environment = ProcessInfo.processInfo.environment
        let directory =
            environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config", isDirectory: true)
        let file = directory.appendingPathComponent("\(name).plist", isDirectory: false)
        guard let data = try? Data(contentsOf: file) else { return }
        if (try? PropertyListSerialization.propertyList(from: data, format: nil)) is [String: Any] { return }
        let aside = file.deletingLastPathComponent()
            .appendingPathComponent("\(name).plist.corrupt-\(Int(Date().timeIntervalSince1970 * 1000))")
        let kept = (try? data.write(to: aside)) != nil ? "kept a copy as \(aside.path)" : "could not keep a copy"
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .storageFailed, keys: [key],
                message: "the UserDefaults file of suite '\(suite)' (\(file.path)) is not a readable property list; "
                    + "Foundation reads it as empty and will overwrite it; \(kept)"))
        #endif
    }
}
