import Foundation
import StateKit
import StateKitHTTP
import Testing

/// Receipts against real servers (Apache with mod_dav, wsgidav, moto): a write another device's
/// newer value replaced is discarded, naming the policy and the destination; writes of two
/// containers of one key behind one channel, and behind an outbox, are delivered, each once.
@Suite(.contendingTimeLimit, .serialized) struct ReceiptRealServerTests {
    init() { DiagnosticsRecorder.start() }

    private func sink(_ server: RealHTTPServer, _ url: URL, loadsOnStart: Bool = true) -> HTTPSyncSink<Int> {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(10), maximumAttempts: 5)
        policy.afterRepeatedFailures = .giveUpAndReport
        let headers = server.headers
        return HTTPSyncSink(
            endpoint: url, timeout: .seconds(10), conflictPolicy: .serverWins, loadsOnStart: loadsOnStart,
            policy: policy
        ) { request in
            for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
        }
    }

    /// Each server is started once for the three cases: nine servers starting beside the whole
    /// suite load a 2-core machine for nothing.
    @Test(arguments: RealHTTPServer.Kind.allCases)
    func receiptsAgainstARealServer(kind: RealHTTPServer.Kind) async throws {
        try await RealHTTPServer.with(kind) { server, directory async throws in
            try await aWriteTheServersValueReplacedIsDiscarded(server, directory.appending(path: "discard"))
            try await writesOfTwoContainersOfOneKeyAreAllDelivered(server, directory.appending(path: "two"))
            try await writesBehindAnOutboxWaitVisiblyThenAreDelivered(server, directory.appending(path: "outbox"))
        }
    }

    /// Another device writes 22 after this one loaded 1 (another size: wsgidav's ETag is the
    /// file's time to the second and its size); this one writes 7 on the stale ETag:
    /// `.serverWins` keeps 22, and the receipt of 7 says it was discarded, and by what.
    private func aWriteTheServersValueReplacedIsDiscarded(_ server: RealHTTPServer, _ directory: URL) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = server.resource()
        #expect(try await server.request("PUT", url, body: Data("1".utf8)).status < 300)
        let state = SyncedState(0, key: uniqueKey(), storage: .file(directory)) { sink(server, url) }
        #expect(await state.flush(timeout: .seconds(30)))
        #expect(state.value == 1)
        #expect(try await server.request("PUT", url, body: Data("22".utf8)).status < 300)
        let receipt = state.write { $0 = 7 }
        let outcome = await receipt.outcome(timeout: .seconds(30))
        guard case .discarded(let reason)? = outcome else {
            Issue.record("expected a discard, got \(String(describing: outcome))")
            return
        }
        #expect(reason.contains(".serverWins") && reason.contains(url.absoluteString), "\(reason)")
        #expect(state.value == 22)
        #expect(try await server.value(Int.self, at: url) == 22)
        #expect(await receipt.saved(timeout: .seconds(10)), "7 was saved before the server's value replaced it")
    }

    /// Two containers of one persisted key, one channel: 200 writes from two threads, every
    /// receipt delivered (the server holds the last value, which includes every write), and the
    /// last one saved.
    private func writesOfTwoContainersOfOneKeyAreAllDelivered(_ server: RealHTTPServer, _ directory: URL) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = server.resource()
        let key = uniqueKey()
        let first = SyncedState(0, key: key, storage: .file(directory)) { sink(server, url) }
        let second = SyncedState(0, key: key, storage: .file(directory)) { sink(server, url) }
        let receipts = Collector<WriteReceipt>()
        await onThreads(2) { thread in
            for _ in 0..<100 { receipts.append((thread == 0 ? first : second).write { $0 += 1 }) }
        }
        #expect(Set(receipts.all.map(\.version)) == Set(1...200))
        for receipt in receipts.all {
            #expect(await receipt.outcome(timeout: .seconds(30)) == .delivered, "version \(receipt.version)")
        }
        #expect(try await server.value(Int.self, at: url) == 200)
        #expect(first.pendingWrites.isEmpty && second.pendingWrites.isEmpty)
        #expect(await second.receipt(for: 200)?.saved(timeout: .seconds(10)) == true)
    }

    /// Behind an outbox without storage, the server down for the first writes: they wait in
    /// `pendingWrites` with their attempts and error, then are delivered once it is up, and the
    /// outbox holds them on disk before that (`saved`).
    private func writesBehindAnOutboxWaitVisiblyThenAreDelivered(_ server: RealHTTPServer, _ directory: URL)
        async throws
    {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = server.resource()
        let refused = try RefusedPort()
        let down = refused.url
        let outbox = directory.appending(path: "state.outbox")
        let key = uniqueKey()
        do {
            var policy = SinkPolicy.latestValue
            policy.retry = RetryPolicy(
                initialDelay: .milliseconds(5), maximumDelay: .milliseconds(5), maximumAttempts: 2)
            policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: .seconds(600))
            policy.drainTimeout = .milliseconds(100)
            let offline = SyncedState(0, key: key) {
                DurableOutbox(
                    fileURL: outbox,
                    wrapping: HTTPSyncSink<Int>(endpoint: down, timeout: .seconds(5), policy: policy))
            }
            var last: WriteReceipt?
            for _ in 1...5 { last = offline.write { $0 += 1 } }
            #expect(await last?.saved(timeout: .seconds(10)) == true)
            await eventually("the sink to pause") { offline.syncStatus.value.isPaused }
            let pending = offline.pendingWrites
            #expect(pending.map(\.version).last == 5)
            #expect(pending.allSatisfy { $0.lastError != nil })
        }
        let online = SyncedState(0, key: key) { DurableOutbox(fileURL: outbox, wrapping: sink(server, url)) }
        #expect(online.value == 5)
        for version in UInt64(1)...5 {
            #expect(await online.receipt(for: version)?.outcome(timeout: .seconds(30)) == .delivered)
        }
        #expect(try await server.value(Int.self, at: url) == 5)
    }
}
