import Foundation
import StateKit
import Testing

/// A `UserDefaults` suite of the test's own, removed by `cleanUp()`.
struct TemporaryDefaults {
    let name: String
    let defaults: UserDefaults

    init(_ test: String = #function) {
        name = "StateKitTests.\(test.prefix { $0 != "(" }).\(UUID().uuidString)"
        defaults = UserDefaults(suiteName: name)!
    }

    func cleanUp() {
        defaults.removePersistentDomain(forName: name)
    }
}

@Suite struct UserDefaultsStateTests {
    init() { DiagnosticsRecorder.start() }

    @Test func existingValueIsLoadedAndChangesAreStored() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        suite.defaults.set(true, forKey: "isTouchIDEnabled")

        let isTouchIDEnabled = UserDefaultsState(false, key: "isTouchIDEnabled", defaults: suite.defaults)
        #expect(isTouchIDEnabled.value == true)

        isTouchIDEnabled ~> false
        #expect(suite.defaults.bool(forKey: "isTouchIDEnabled") == false)
        #expect(suite.defaults.object(forKey: "isTouchIDEnabled") != nil)
    }

    @Test func optionalBecomingNilRemovesTheKey() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        do {
            let rating = UserDefaultsState<Int?>(nil, key: "appRating", defaults: suite.defaults)
            rating ~> 4
            #expect(suite.defaults.object(forKey: "appRating") as? Int == 4)
            rating ~> nil
            #expect(suite.defaults.object(forKey: "appRating") == nil)
            // A second container on the key shares the live value, nil, rather than its default.
            #expect(UserDefaultsState<Int?>(7, key: "appRating", defaults: suite.defaults).value == nil)
        }
        #expect(UserDefaultsState<Int?>(7, key: "appRating", defaults: suite.defaults).value == 7)
    }

    @Test func propertyListValuesAreStoredNatively() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let date = Date(timeIntervalSince1970: 1_000)
        UserDefaultsState(0, key: "int", defaults: suite.defaults) ~> 3
        UserDefaultsState(0.0, key: "double", defaults: suite.defaults) ~> 2.5
        UserDefaultsState("", key: "string", defaults: suite.defaults) ~> "hi"
        UserDefaultsState(Data(), key: "data", defaults: suite.defaults) ~> Data([1, 2])
        UserDefaultsState(Date.distantPast, key: "date", defaults: suite.defaults) ~> date
        UserDefaultsState([Int](), key: "array", defaults: suite.defaults) ~> [1, 2]
        UserDefaultsState([String: [String]](), key: "dictionary", defaults: suite.defaults) ~> ["a": ["b"]]

        #expect(suite.defaults.integer(forKey: "int") == 3)
        #expect(suite.defaults.double(forKey: "double") == 2.5)
        #expect(suite.defaults.string(forKey: "string") == "hi")
        #expect(suite.defaults.data(forKey: "data") == Data([1, 2]))
        #expect(suite.defaults.object(forKey: "date") as? Date == date)
        #expect(suite.defaults.array(forKey: "array") as? [Int] == [1, 2])
        #expect(suite.defaults.dictionary(forKey: "dictionary") as? [String: [String]] == ["a": ["b"]])

        #expect(UserDefaultsState(0, key: "int", defaults: suite.defaults).value == 3)
        #expect(
            UserDefaultsState([String: [String]](), key: "dictionary", defaults: suite.defaults).value == ["a": ["b"]])
    }

    @Test func codableValueIsStoredAsJSONData() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let profile = UserDefaultsState(Profile(name: "", age: 0), key: "profile", defaults: suite.defaults)
        profile ~> Profile(name: "Ada", age: 36)
        let data = try #require(suite.defaults.data(forKey: "profile"))
        #expect(try JSONDecoder().decode(Profile.self, from: data) == Profile(name: "Ada", age: 36))
        #expect(
            UserDefaultsState(Profile(name: "", age: 0), key: "profile", defaults: suite.defaults).value.name == "Ada")

        let optional = UserDefaultsState<Profile?>(nil, key: "optionalProfile", defaults: suite.defaults)
        optional ~> Profile(name: "Bo", age: 1)
        #expect(UserDefaultsState<Profile?>(nil, key: "optionalProfile", defaults: suite.defaults).value?.name == "Bo")
    }

    @Test func secureCodingObjectIsArchived() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let url = NSURL(string: "https://example.com/a")!
        let state = UserDefaultsState<NSURL?>(nil, key: "url", defaults: suite.defaults)
        state ~> url
        let archive = try #require(suite.defaults.data(forKey: "url"))
        #expect(try NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive) == url)
        #expect(UserDefaultsState<NSURL?>(nil, key: "url", defaults: suite.defaults).value == url)
    }

    @Test func valueOfAnotherTypeFallsBackAndIsKeptAside() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        suite.defaults.set("yes", forKey: key)
        let flag = UserDefaultsState(false, key: key, defaults: suite.defaults)
        #expect(flag.value == false)
        let diagnostic = try #require(
            DiagnosticsRecorder.diagnostics(involving: key).first { $0.kind == .decodingFailed })
        #expect(diagnostic.message.contains("UserDefaults"))
        #expect((diagnostic.error as? StoredValueMismatch)?.description == "expected Bool, found String")
        let aside = try #require(
            suite.defaults.dictionaryRepresentation().keys.first { $0.hasPrefix("\(key).corrupt-") })
        #expect(suite.defaults.string(forKey: aside) == "yes")
        flag ~> true
        #expect(suite.defaults.string(forKey: aside) == "yes")
    }

    @Test func undecodableDataFallsBackAndIsKeptAside() throws {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        suite.defaults.set(Data("not json".utf8), forKey: key)
        let profile = UserDefaultsState(Profile(name: "d", age: 0), key: key, defaults: suite.defaults)
        #expect(profile.value == Profile(name: "d", age: 0))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .decodingFailed })
        #expect(suite.defaults.dictionaryRepresentation().keys.contains { $0.hasPrefix("\(key).corrupt-") })
    }

    @Test func flushAfterConcurrentWritersStoresTheNewestValue() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let counter = UserDefaultsState(0, key: "counter", defaults: suite.defaults)
        let subscription = counter.subscribe { _ in }
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<500 { counter.modify { $0 += 1 } }
        }
        counter.flush()
        #expect(suite.defaults.integer(forKey: "counter") == 2_000)
        subscription.cancel()
    }

    @Test func concurrentWritersLeaveTheNewestValueStored() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let counter = UserDefaultsState(0, key: "counter", defaults: suite.defaults)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<500 { counter.modify { $0 += 1 } }
        }
        waitUntilDelivered(counter)
        #expect(counter.value == 2_000)
        #expect(suite.defaults.integer(forKey: "counter") == 2_000)
    }
}
