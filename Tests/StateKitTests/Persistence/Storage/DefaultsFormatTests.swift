import Foundation
import StateKit
import Testing

/// One UserDefaults format: every container and storage writing UserDefaults stores what
/// Foundation and `@AppStorage` store, and reads what they and ordinary app code wrote.
@Suite struct DefaultsFormatTests {
    init() { DiagnosticsRecorder.start() }

    enum Theme: String, Codable, Sendable {
        case light, dark
    }

    struct Profile: Codable, Equatable, Sendable {
        var name: String
    }

    private func noneKeptAside(_ suite: TemporaryDefaults, _ key: String) -> Bool {
        suite.defaults.dictionaryRepresentation().keys.allSatisfy { !$0.hasPrefix("\(key).corrupt-") }
            && DiagnosticsRecorder.diagnostics(involving: key).isEmpty
    }

    @Test func aBoolStoredByAppCodeReadsTrueThroughPersistedStorageAndIsWrittenBackNatively() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        suite.defaults.set(true, forKey: key)
        let flag = PersistedState(false, key: key, storage: .userDefaults(suite.defaults))
        #expect(flag.value == true)
        flag ~> false
        #expect(suite.defaults.object(forKey: key) as? Bool == false)
        #expect(noneKeptAside(suite, key))
    }

    @Test func aNumberStoredByAppCodeReadsIntoAnyNumericContainerItFits() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let integerKey = uniqueKey("integer")
        let doubleKey = uniqueKey("double")
        suite.defaults.set(3, forKey: integerKey)
        suite.defaults.set(2.0, forKey: doubleKey)
        #expect(UserDefaultsState(0.0, key: integerKey, defaults: suite.defaults).value == 3.0)
        #expect(UserDefaultsState(0, key: doubleKey, defaults: suite.defaults).value == 2)
        #expect(noneKeptAside(suite, integerKey) && noneKeptAside(suite, doubleKey))
    }

    @Test func urlsAndRawValuesAreStoredAsFoundationAndAppStorageStoreThem() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let urlKey = uniqueKey("url")
        let themeKey = uniqueKey("theme")
        let home = try #require(URL(string: "https://example.com/a"))
        do {
            let url = UserDefaultsState(home, key: urlKey, defaults: suite.defaults)
            let theme = PersistedState(Theme.light, key: themeKey, storage: .userDefaults(suite.defaults))
            url ~> URL(string: "https://example.com/b")!
            theme ~> .dark
        }
        #expect(suite.defaults.url(forKey: urlKey) == URL(string: "https://example.com/b"))
        #expect(suite.defaults.string(forKey: themeKey) == "dark")

        // A file URL: swift-corelibs-foundation's set(_:forKey:) keeps any URL as its path.
        suite.defaults.set(URL(fileURLWithPath: "/tmp/c"), forKey: urlKey)
        suite.defaults.set("light", forKey: themeKey)
        #expect(UserDefaultsState(home, key: urlKey, defaults: suite.defaults).value == URL(fileURLWithPath: "/tmp/c"))
        #expect(PersistedState(Theme.dark, key: themeKey, storage: .userDefaults(suite.defaults)).value == .light)
        #expect(noneKeptAside(suite, urlKey) && noneKeptAside(suite, themeKey))
    }

    @Test func codableValuesAreJSONAndEachContainerKindReadsWhatTheOtherWrote() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        do {
            let seed = UserDefaultsState(Profile(name: ""), key: key, defaults: suite.defaults)
            seed ~> Profile(name: "Ada")
        }
        let stored = try #require(suite.defaults.data(forKey: key))
        #expect(try JSONDecoder().decode(Profile.self, from: stored) == Profile(name: "Ada"))
        let wrapped = PersistedState(Profile(name: ""), key: key, storage: .userDefaults(suite.defaults))
        #expect(wrapped.value == Profile(name: "Ada"))
        #expect(noneKeptAside(suite, key))
    }

    @Test func aValueThatTrulyCannotBeReadIsTheOnlyOneKeptAside() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        suite.defaults.set("not a number", forKey: key)
        let count = UserDefaultsState(7, key: key, defaults: suite.defaults)
        #expect(count.value == 7)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.decodingFailed])
        #expect(suite.defaults.dictionaryRepresentation().keys.contains { $0.hasPrefix("\(key).corrupt-") })
    }
}
