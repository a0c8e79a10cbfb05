import Foundation
import StateKit
import StateKitHTTP
import StateKitTesting
import Testing

/// The shipped sinks and storages keep their protocols' contracts, checked with the functions
/// StateKitTesting ships for users' own implementations; and those checks catch broken ones.
@Suite(.timeLimit(.minutes(1))) struct ContractCheckTests {
    init() { DiagnosticsRecorder.start() }

    // MARK: Sinks

    @Test func recordingSinkKeepsTheSinkContract() async throws {
        let sink = RecordingSink<Int>()
        try await checkStateSinkContract(sink, sampleValues: [1, 2, 3, 4]) { sink.values }
    }

    @Test func closureSinkKeepsTheSinkContract() async throws {
        let received = Collector<Int>()
        let sink = ClosureSink<Int> { changes in for change in changes { received.append(change.newValue) } }
        try await checkStateSinkContract(sink, sampleValues: [1, 2, 3, 4]) { received.all }
    }

    @Test func loggingSinkKeepsTheSinkContract() async throws {
        try await checkStateSinkContract(LoggingSink<Int>(label: "contract") { _ in }, sampleValues: [1, 2, 3])
    }

    @Test func analyticsSinkKeepsTheSinkContract() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let backend = JSONLinesAnalyticsBackend(fileURL: directory.url.appending(path: "events.jsonl"))
        let sink = AnalyticsSink<Int, JSONLinesAnalyticsBackend>(backend: backend) { change in
            AnalyticsEvent(name: "value", properties: ["value": String(change.newValue)])
        }
        try await checkStateSinkContract(sink, sampleValues: [1, 2, 3]) {
            try backend.events().compactMap { $0.properties["value"].flatMap(Int.init) }
        }
    }

    @Test func durableOutboxAndNamedSinkKeepTheSinkContract() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let inner = RecordingSink<Int>()
        let outbox = DurableOutbox(fileURL: directory.url.appending(path: "contract.outbox"), wrapping: inner)
        try await checkStateSinkContract(outbox.named("outbox"), sampleValues: [1, 2, 3]) { inner.values }
    }

    @Test func httpSyncSinkKeepsTheSinkContract() async throws {
        let server = try FixtureHTTPServer(maximumRequests: 200)
        defer { server.stop() }
        let sink = HTTPSyncSink<Int>(endpoint: server.url, loadsOnStart: false)
        try await checkStateSinkContract(sink, sampleValues: [1, 2, 3]) {
            server.requests.filter { $0.method == "PUT" }.compactMap {
                try? JSONDecoder().decode(Int.self, from: $0.body)
            }
        }
    }

    @Test func theSinkCheckCatchesABrokenSink() async throws {
        /// Unnamed, and sends each change's old value instead of its new one.
        struct OffByOne: StateSink {
            let received = Collector<Int>()
            var name: String { "" }
            func send(_ changes: [StateChange<Int>]) async throws {
                for change in changes { received.append(change.oldValue) }
            }
        }
        let sink = OffByOne()
        let violation = await #expect(throws: ContractViolation.self) {
            try await checkStateSinkContract(sink, sampleValues: [1, 2, 3, 4]) { sink.received.all }
        }
        #expect(violation?.failures.contains("name: is empty") == true)
        #expect(violation?.failures.contains { $0.contains("the destination") } == true)
    }

    // MARK: Storages

    @Test func fileStorageKeepsTheStorageContract() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try await checkStateStorageContract { .file(directory.url) }
    }

    @Test func userDefaultsStorageKeepsTheStorageContract() async throws {
        let suite = "statekit-contract-\(UUID().uuidString)"
        defer { UserDefaults().removePersistentDomain(forName: suite) }
        try await checkStateStorageContract { .userDefaults(suiteName: suite) }
    }

    @Test func inMemoryStorageKeepsTheStorageContract() async throws {
        let storage = InMemoryStateStorage.inMemory
        try await checkStateStorageContract { storage }
    }

    @Test func theStorageCheckCatchesABrokenStorage() async throws {
        /// Maps keys to file-name-safe names by replacing `/`: 'a/b' and 'a_b' collide.
        final class Lossy: StateStorage, @unchecked Sendable {
            private let lock = NSLock()
            private var values: [String: Data] = [:]
            var location: String { "lossy" }
            func load(forKey key: String) throws -> Data? {
                lock.withLock { values[key.replacingOccurrences(of: "/", with: "_")] }
            }
            func save(_ data: Data, forKey key: String) throws {
                lock.withLock { values[key.replacingOccurrences(of: "/", with: "_")] = data }
            }
            func remove(forKey key: String) throws {
                _ = lock.withLock { values.removeValue(forKey: key.replacingOccurrences(of: "/", with: "_")) }
            }
        }
        let storage = Lossy()
        let violation = await #expect(throws: ContractViolation.self) {
            try await checkStateStorageContract { storage }
        }
        #expect(violation?.failures == ["'a/b' reads the bytes of 'a_b'"])
    }
}
