import Foundation
import StateKit
import StateKitHTTP
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A synced container behind a durable outbox, killed with kill -9 while it writes (semantics 20):
/// the relaunch starts from the newest value the outbox logged (for a container without storage
/// the log is where its value lives; for a persisted one, storage may not have saved it yet),
/// never sends its default over the server's data, and storage, container and server converge
/// on one value. Against the real servers.
@Suite(.timeLimit(.minutes(3)), .serialized) struct OutboxRelaunchTests {
    enum Policy: String, CaseIterable, Sendable {
        case clientWins = "client-wins"
        case serverWins = "server-wins"
    }

    static let cases: [(RealHTTPServer.Kind, Policy, Bool)] = RealHTTPServer.Kind.allCases.flatMap { kind in
        Policy.allCases.flatMap { policy in [false, true].map { (kind, policy, $0) } }
    }

    init() { DiagnosticsRecorder.start() }

    @Test(arguments: cases)
    func aRelaunchAfterAKillWhileWritingStartsFromTheLoggedValueAndConverges(
        kind: RealHTTPServer.Kind, policy: Policy, persisted: Bool
    ) async throws {
        try await RealHTTPServer.with(kind) { server, directory in
            let url = server.resource()
            let key = uniqueKey("counter")
            let outbox = directory.appending(path: "counter.outbox")
            let storage = directory.appending(path: "values")

            let child = try await SinksHelper.launch(
                [
                    "sync-count", outbox.path, key, url.absoluteString, policy.rawValue,
                    server.headers["Authorization"] ?? "-",
                ] + (persisted ? [storage.path] : []))
            #expect(child.firstLine == "counting from 0")
            // Killed while it writes, once the server holds some of its changes.
            var reached = 0
            let deadline = ContinuousClock.now + .seconds(30)
            while reached < 100 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                // The child keeps writing: on a busy machine every retry of a read may race a PUT
                // and come back cut short. That is no answer yet; poll again.
                if let value = try? await server.value(Int.self, at: url) { reached = value }
            }
            await child.kill()
            #expect(reached >= 100, "the server never held 100")
            // A kill in the middle of a PUT may leave wsgidav holding the part of the body it got:
            // then it held no number, and the relaunch writes over the bytes.
            let heldAtTheKill = (try? await server.value(Int.self, at: url) ?? 0) ?? 0

            let sinks: [any StateSink<Int>] = [DurableOutbox(fileURL: outbox, wrapping: sink(server, url, policy))]
            let state =
                persisted
                ? SyncedState(0, key: key, storage: .file(storage), sinks: sinks)
                : SyncedState(0, key: key, sinks: sinks)
            let restored = state.value
            #expect(
                restored >= heldAtTheKill, "the relaunch started from \(restored), the server held \(heldAtTheKill)")
            #expect(state.version >= UInt64(restored))
            // A torn value on the server is the kill's own write cut short: written over under
            // every policy (semantics 27), so the relaunch converges either way.
            #expect(await state.flush(timeout: .seconds(60)))
            let held = try await server.value(Int.self, at: url)
            #expect(held == state.value, "diverged: the server holds \(held ?? -1), the container \(state.value)")
            #expect(held != 0, "the default value reached the server")
            #expect((held ?? 0) >= heldAtTheKill)
            // Nothing of this key's own changes is a conflict: under .serverWins too, the newest
            // value the relaunch started from wins, and nothing is reported discarded (semantics 27).
            #expect(held == restored, "the relaunch started from \(restored); the server holds \(held ?? -1)")
            let discarded = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .localChangesDiscarded }
            #expect(discarded.isEmpty, "\(discarded)")
            if persisted {
                let stored = try #require(try FileStateStorage.file(storage).load(forKey: key))
                #expect(try JSONDecoder().decode(Int.self, from: stored) == state.value, "storage diverged")
            }
        }
    }

    private func sink(_ server: RealHTTPServer, _ url: URL, _ policy: Policy) -> HTTPSyncSink<Int> {
        let headers = server.headers
        return HTTPSyncSink(
            endpoint: url, timeout: .seconds(10), conflictPolicy: policy == .clientWins ? .clientWins : .serverWins
        ) { request in
            for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
        }
    }

    /// What the server holds. Wsgidav serves a file while a PUT rewrites it, so a read that races
    /// one may come back cut short: it is read again.
}
