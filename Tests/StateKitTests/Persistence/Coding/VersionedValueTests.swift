import Foundation
import StateKit
import Testing

/// Version 1 of the settings, as an older release stored them.
struct SettingsV1: VersionedValue, Sendable, Equatable {
    static let schemaVersion = 1
    var theme: String
}

/// Version 2: the theme became a dark-mode flag, and a font size was added.
struct SettingsV2: VersionedValue, Sendable, Equatable {
    static let schemaVersion = 2
    var isDark: Bool
    var fontSize: Double

    static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> SettingsV2 {
        switch storedVersion {
        case 0:
            let theme = try decoder.singleValueContainer().decode(String.self)
            return SettingsV2(isDark: theme == "dark", fontSize: 12)
        case 1:
            let v1 = try SettingsV1(from: decoder)
            return SettingsV2(isDark: v1.theme == "dark", fontSize: 14)
        default:
            throw UnsupportedSchemaVersion(type: "SettingsV2", storedVersion: storedVersion, schemaVersion: 2)
        }
    }
}

@Suite struct VersionedValueTests {
    init() { DiagnosticsRecorder.start() }

    @Test func storedVersionOneIsMigratedIntoAVersionTwoContainer() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        do {
            let old = PersistedState(SettingsV1(theme: "light"), key: key, storage: storage)
            old ~> SettingsV1(theme: "dark")
            old.flush()
        }
        #expect(try storage.load(forKey: key) == Data(#"{"schemaVersion":1,"value":{"theme":"dark"}}"#.utf8))
        let settings = PersistedState(SettingsV2(isDark: false, fontSize: 10), key: key, storage: storage)
        #expect(settings.value == SettingsV2(isDark: true, fontSize: 14))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
        settings.modify { $0.fontSize = 16 }
        settings.flush()
        #expect(
            try storage.load(forKey: key)
                == Data(#"{"schemaVersion":2,"value":{"fontSize":16,"isDark":true}}"#.utf8))
    }

    @Test func valueStoredWithoutVersionMigratesFromVersionZero() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#""dark""#.utf8), forKey: key)
        let settings = PersistedState(SettingsV2(isDark: false, fontSize: 10), key: key, storage: storage)
        #expect(settings.value == SettingsV2(isDark: true, fontSize: 12))
    }

    @Test func newerStoredVersionIsReportedAndKeptAside() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let future = Data(#"{"schemaVersion":3,"value":{"fontSize":1}}"#.utf8)
        try storage.save(future, forKey: key)
        let settings = PersistedState(SettingsV2(isDark: false, fontSize: 10), key: key, storage: storage)
        #expect(settings.value == SettingsV2(isDark: false, fontSize: 10))
        let diagnostic = try #require(
            DiagnosticsRecorder.diagnostics(involving: key).first { $0.kind == .decodingFailed })
        #expect(diagnostic.error is UnsupportedSchemaVersion)
        #expect(storage.keys.contains { $0.hasPrefix("\(key).corrupt-") })
    }

    @Test func typeWithoutMigrationRejectsOlderVersions() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#"{"schemaVersion":0,"value":"x"}"#.utf8), forKey: key)
        let settings = PersistedState(SettingsV1(theme: "light"), key: key, storage: storage)
        #expect(settings.value == SettingsV1(theme: "light"))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.error is UnsupportedSchemaVersion })
    }
}
