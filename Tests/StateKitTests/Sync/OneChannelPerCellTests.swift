import Foundation
import StateKit
import StateKitHTTP
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One cell, one remote channel: persisted containers of one key in one storage
/// that sync to one destination share one pipeline, one engine and one sync record, so their
/// conditional writes never conflict with each other (issue 42, item 3). Against every real server.
@Suite(.timeLimit(.minutes(3)), .serialized) struct OneChannelPerCellTests {
    init() { DiagnosticsRecorder.start() }

    /// Runs `body` with a fresh server of `kind`, or skips (loudly) when it is not installed.
    private func with(_ kind: RealHTTPServer.Kind, _ body: (RealHTTPServer) async throws -> Void) async throws {
        guard let server = try await RealHTTPServer.start(kind) else { return }
        defer { server.stop() }
        try await body(server)
    }

    /// A sink to `url` with `.serverWins`, recording every request in `requests` ("GET", or
    /// "GET If-None-Match: …" for a conditional load) and every write that will meet a conflict
    /// in `conflicts`: just before each `PUT`, the server's current `ETag` is read and compared
    /// with the write's condition (within one channel, nothing else writes in between).
    private func sink(
        _ server: RealHTTPServer, _ url: URL, requests: Collector<String>, conflicts: Collector<String>
    ) -> HTTPSyncSink<Int> {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(10), maximumAttempts: 5)
        policy.afterRepeatedFailures = .giveUpAndReport
        let headers = server.headers
        return HTTPSyncSink(endpoint: url, timeout: .seconds(10), conflictPolicy: .serverWins, policy: policy) {
            request in
            for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
            let ifNoneMatch = request.value(forHTTPHeaderField: "If-None-Match")
            requests.append("\(request.httpMethod ?? "?")\(ifNoneMatch.map { " If-None-Match: \($0)" } ?? "")")
            guard request.httpMethod == "PUT" else { return }
            let current = try await server.request("GET", url)
            if let ifMatch = request.value(forHTTPHeaderField: "If-Match") {
                if current.status != 200 || current.etag != ifMatch {
                    conflicts.append("If-Match \(ifMatch), server \(current.status) \(current.etag ?? "-")")
                }
            } else if ifNoneMatch == "*" && current.status == 200 {
                conflicts.append("If-None-Match: *, server 200 \(current.etag ?? "-")")
            }
        }
    }

    /// A persisted container of `key` in `directory` whose sink writes to `url`, recording what it
    /// sends in `requests` and `conflicts` (see ``sink(_:_:requests:conflicts:)``).
    private func container(
        _ key: String, _ directory: TemporaryDirectory, _ server: RealHTTPServer, _ url: URL,
        _ requests: Collector<String>, _ conflicts: Collector<String>
    ) -> SyncedState<Int> {
        SyncedState(
            0, key: key, storage: .file(directory.url),
            sinks: [sink(server, url, requests: requests, conflicts: conflicts)])
    }

    private func serverValue(_ server: RealHTTPServer, _ url: URL) async throws -> Int? {
        let (status, body, _) = try await server.request("GET", url)
        return status == 200 ? try JSONDecoder().decode(Int.self, from: body) : nil
    }

    /// `count` increments on each of two real threads, one per container.
    private func increment(_ first: SyncedState<Int>, _ second: SyncedState<Int>, count: Int) {
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            let state = thread == 0 ? first : second
            for _ in 0..<count { state.modify { $0 += 1 } }
        }
    }

    private func discarded(_ key: String) -> Int {
        DiagnosticsRecorder.diagnostics(involving: key).filter {
            $0.kind == .localChangesDiscarded || $0.kind == .syncConflictUnresolved
        }.count
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func twoContainersOfOneKeyShareOneChannel(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let url = server.resource()
            let key = uniqueKey()
            let requests = Collector<String>()
            let conflicts = Collector<String>()
            let first = container(key, directory, server, url, requests, conflicts)
            let second = container(key, directory, server, url, requests, conflicts)
            increment(first, second, count: 200)
            #expect(first.value == 400)
            #expect(await first.flush(timeout: .seconds(30)))
            #expect(await second.flush(timeout: .seconds(30)))
            // One engine serves both: one load at start before the first write.
            #expect(requests.all.prefix { !$0.hasPrefix("PUT") }.count == 1)
            // One pipeline serves both: their statistics are one sink's.
            #expect(first.statistics.count == 1)
            #expect(second.statistics.count == 1)
            let sent = first.statistics[0].sent
            #expect(second.statistics[0].sent == sent)
            #expect(first.statistics[0].failed == 0)
            #expect(conflicts.all == [])
            #expect(discarded(key) == 0)
            #expect(try await serverValue(server, url) == 400)
            #expect(first.value == 400)
            #expect(second.value == 400)
            #expect(first.syncStatus.value.isSynced)
            #expect(second.syncStatus.value.isSynced)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func theChannelOutlivesTheContainerThatMadeIt(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let url = server.resource()
            let key = uniqueKey()
            let requests = Collector<String>()
            let conflicts = Collector<String>()
            var first: SyncedState<Int>? = container(key, directory, server, url, requests, conflicts)
            let second = container(key, directory, server, url, requests, conflicts)
            increment(try #require(first), second, count: 100)
            first = nil
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<100 { second.modify { $0 += 1 } }
            }
            #expect(second.value == 400)
            #expect(await second.flush(timeout: .seconds(30)))
            #expect(second.statistics.count == 1)
            #expect(second.statistics[0].failed == 0)
            #expect(conflicts.all == [])
            #expect(discarded(key) == 0)
            #expect(try await serverValue(server, url) == 400)
            #expect(second.value == 400)
            // A pull through the remaining container still reaches the cell.
            try await second.refresh()
            #expect(second.value == 400)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func aRelaunchStartsCleanFromWhatBothSent(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let url = server.resource()
            let key = uniqueKey()
            do {
                let requests = Collector<String>()
                let conflicts = Collector<String>()
                let first = container(key, directory, server, url, requests, conflicts)
                let second = container(key, directory, server, url, requests, conflicts)
                increment(first, second, count: 200)
                #expect(await first.flush(timeout: .seconds(30)))
                #expect(await second.flush(timeout: .seconds(30)))
                #expect(conflicts.all == [])
                #expect(try await serverValue(server, url) == 400)
            }
            let requests = Collector<String>()
            let conflicts = Collector<String>()
            let first = container(key, directory, server, url, requests, conflicts)
            let second = container(key, directory, server, url, requests, conflicts)
            #expect(first.value == 400)
            #expect(await first.flush(timeout: .seconds(30)))
            #expect(await second.flush(timeout: .seconds(30)))
            // One load at start, conditional on the remembered ETag, and nothing to send.
            #expect(requests.all.count == 1)
            #expect(requests.all.first?.hasPrefix("GET If-None-Match: ") == true)
            #expect(requests.all.contains { $0.hasPrefix("PUT") } == false)
            #expect(conflicts.all == [])
            #expect(discarded(key) == 0)
            #expect(first.value == 400)
            #expect(second.value == 400)
            #expect(try await serverValue(server, url) == 400)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func twoContainersMadeAtOnceOpenOneChannel(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let url = server.resource()
            for round in 0..<30 {
                let key = uniqueKey("madeAtOnce\(round)")
                let requests = Collector<String>()
                let conflicts = Collector<String>()
                let made = Collector<SyncedState<Int>>()
                let ready = Collector<Int>()
                DispatchQueue.concurrentPerform(iterations: 2) { thread in
                    // Both threads start making their container at once.
                    ready.append(thread)
                    while ready.count < 2 {}
                    made.append(
                        container(key, directory, server, url, requests, conflicts))
                }
                for state in made.all { #expect(await state.flush(timeout: .seconds(30))) }
                // One engine: one load at start, not one per container.
                #expect(requests.all.count == 1)
                #expect(conflicts.all == [])
            }
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func anOutboxChannelOutlivesTheContainerThatOpenedIt(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let url = server.resource()
            let key = uniqueKey()
            let outbox = directory.url.appending(path: "outbox.log")
            let requests = Collector<String>()
            let conflicts = Collector<String>()
            func outboxSink() -> [any StateSink<Int>] {
                [DurableOutbox(fileURL: outbox, wrapping: sink(server, url, requests: requests, conflicts: conflicts))]
            }
            var first: SyncedState<Int>? = SyncedState(0, key: key, storage: .file(directory.url), sinks: outboxSink())
            let second = SyncedState(0, key: key, storage: .file(directory.url), sinks: outboxSink())
            increment(try #require(first), second, count: 100)
            first = nil
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<100 { second.modify { $0 += 1 } }
            }
            #expect(await second.flush(timeout: .seconds(30)))
            #expect(second.statistics.count == 1)
            #expect(second.statistics[0].pending == 0)
            #expect(conflicts.all == [])
            #expect(discarded(key) == 0)
            #expect(try await serverValue(server, url) == 400)
            #expect(second.value == 400)
        }
    }
}
