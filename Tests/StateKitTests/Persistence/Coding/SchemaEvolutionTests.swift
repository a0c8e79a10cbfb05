import Foundation
import StateKit
import Testing

/// A release that adds properties to a stored `Codable` type keeps the user's stored values.
@Suite struct SchemaEvolutionTests {
    init() { DiagnosticsRecorder.start() }

    struct Window: Codable, Equatable, Sendable {
        var width = 800
        var isFullScreen = false  // added in release 2
    }

    struct Settings: Codable, Equatable, Sendable {
        var name: String
        var theme = "light"  // added in release 2
        var window = Window()
        var recent: [String] = []
    }

    private func container(storing json: String, default defaultValue: Settings) throws -> (
        PersistedState<Settings>, String, TemporaryDirectory
    ) {
        let directory = TemporaryDirectory()
        let key = uniqueKey()
        try FileStateStorage.file(directory.url).save(Data(json.utf8), forKey: key)
        return (PersistedState(defaultValue, key: key, storage: .file(directory.url)), key, directory)
    }

    @Test func addedPropertiesTakeTheContainersDefaultAndStoredOnesAreKept() throws {
        let stored = #"{"name":"Ada","window":{"width":1024},"recent":["a","b"]}"#
        let defaultValue = Settings(name: "", theme: "dark", window: Window(width: 640, isFullScreen: true))
        let (settings, key, directory) = try container(storing: stored, default: defaultValue)
        defer { directory.cleanUp() }
        #expect(
            settings.value
                == Settings(
                    name: "Ada", theme: "dark", window: Window(width: 1024, isFullScreen: true), recent: ["a", "b"]))
        #expect(settings.loadError == nil)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(!names.contains { $0.contains(".corrupt-") })
    }

    @Test func propertiesTheTypeNoLongerHasAreIgnored() throws {
        let stored =
            #"{"name":"Ada","theme":"dark","window":{"width":1,"isFullScreen":false,"dpi":2},"legacy":true,"recent":[]}"#
        let (settings, key, directory) = try container(storing: stored, default: Settings(name: ""))
        defer { directory.cleanUp() }
        #expect(settings.value == Settings(name: "Ada", theme: "dark", window: Window(width: 1)))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
    }

    @Test func dataThatStillDoesNotDecodeIsKeptAsideAndTheDiagnosticNamesTheProperty() throws {
        let stored = #"{"name":"Ada","window":{"width":"wide"}}"#
        let (settings, key, directory) = try container(storing: stored, default: Settings(name: "default"))
        defer { directory.cleanUp() }
        #expect(settings.value == Settings(name: "default"))
        #expect(settings.loadError != nil)
        let reports = DiagnosticsRecorder.diagnostics(involving: key)
        #expect(reports.map(\.kind) == [.decodingFailed])
        #expect(reports.first?.message.contains("window.width") == true)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names.filter { $0.hasPrefix("\(key).corrupt-") }.count == 1)
    }

    @Test func anAddedPropertyIsFilledForUserDefaultsTooAndTheValueIsSavedWhole() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        suite.defaults.set(Data(#"{"name":"Ada"}"#.utf8), forKey: key)
        let settings = UserDefaultsState(Settings(name: "", theme: "dark"), key: key, defaults: suite.defaults)
        #expect(settings.value == Settings(name: "Ada", theme: "dark"))
        settings.modify { $0.recent = ["x"] }
        let saved = try #require(suite.defaults.data(forKey: key))
        #expect(
            try JSONDecoder().decode(Settings.self, from: saved) == Settings(name: "Ada", theme: "dark", recent: ["x"]))
    }
}
