import Foundation
import StateKitHTTP
import Testing

@testable import StateKit

#if canImport(Glibc)
import Glibc
#endif

/// Semantics 26 across processes: a write of a key shared across processes that another process
/// (the app) sends, made in one that does not (the widget), gets a receipt that resolves with what
/// the app's destinations did with it (``SharedOutcomes``). Real child processes against the real
/// servers; each test takes the contention turn, as they load the machine.
@Suite(.contendingTimeLimit, .serialized) struct WidgetReceiptTests {
    init() { DiagnosticsRecorder.start() }

    /// What the other device does in ``aWriteHandedToAnotherProcesssSenderGetsItsOutcome(kind:otherDevice:)``.
    enum OtherDevice: String, CaseIterable, CustomStringConvertible {
        /// Nothing: the sender delivers the widget's write.
        case idle
        /// It writes the server just before the widget writes, and the sender's `.serverWins`
        /// policy takes its value over the widget's write.
        case writesFirst
        var description: String { rawValue }
    }

    /// A widget's write of a key that another process (the app) sends: its receipt resolves with
    /// what the app's destination did with it, delivered or discarded, though the widget sends
    /// nothing. Before, it stayed unresolved until the widget became the sender.
    @Test(arguments: RealHTTPServer.Kind.allCases, OtherDevice.allCases)
    func aWriteHandedToAnotherProcesssSenderGetsItsOutcome(
        kind: RealHTTPServer.Kind, otherDevice: OtherDevice
    ) async throws {
        try await contending {
            try await RealHTTPServer.with(kind) { server, directory in
                let (app, widget, url) = try await appAndWidget(
                    server, directory, key: uniqueKey("widget"), serverWins: true)
                // Its load at start over first: answered after the other device's write, it would take
                // that value into the file, and the app would then deliver the widget's write over it.
                #expect(await widget.flush(timeout: .seconds(30)))
                if otherDevice == .writesFirst {
                    let put = try await server.request("PUT", url, body: Data("5000".utf8))
                    #expect((200..<300).contains(put.status))
                }
                let receipt = widget.write { $0 = 100 }
                #expect(await receipt.saved(timeout: .seconds(10)))
                let outcome = await receipt.outcome(timeout: .seconds(30))
                switch otherDevice {
                case .idle:
                    #expect(outcome == .delivered)
                    #expect(try await server.value(Int.self, at: url) == 100)
                case .writesFirst:
                    guard case .discarded? = outcome else {
                        let held = try? await server.value(Int.self, at: url)
                        Issue.record(
                            "expected discarded, got \(String(describing: outcome)); the server holds \(String(describing: held))"
                        )
                        return await app.kill()
                    }
                    #expect(try await server.value(Int.self, at: url) == 5000)
                    try await waitUntil("the widget takes the server's value") { widget.value == 5000 }
                }
                #expect(widget.statistics[0].sent == 0, "the widget sent nothing itself")
                await app.kill()
            }
        }
    }

    /// The app, the key's sender, is stopped when the widget writes, then killed: the widget
    /// takes over sending, sends its write itself, and its receipt resolves delivered.
    @Test func aWriteHandedToASenderThatDiesIsSentByItsOwnProcess() async throws {
        try await contending {
            try await RealHTTPServer.with(.apache) { server, directory in
                let key = uniqueKey("orphan")
                let (app, widget, url) = try await appAndWidget(server, directory, key: key)

                #expect(Glibc.kill(app.process.processIdentifier, SIGSTOP) == 0)
                let receipt = widget.write { $0 = 100 }
                #expect(await receipt.outcome(timeout: .milliseconds(300)) == nil, "the stopped app sends nothing")
                await app.kill()
                #expect(await receipt.outcome(timeout: .seconds(30)) == .delivered)
                #expect(try await server.value(Int.self, at: url) == 100)
                #expect(widget.statistics[0].sent >= 1, "the widget sent it")
            }
        }
    }

    /// The app counts while the widget writes: each of the widget's 50 receipts resolves once,
    /// delivered, and the server ends at every increment of both.
    @Test func everyReceiptOfAWidgetWritingBesideItsAppResolvesDelivered() async throws {
        try await contending {
            try await RealHTTPServer.with(.apache) { server, directory in
                let url = server.resource()
                let key = uniqueKey("busy")
                let app = try await launchApp(server, directory, key: key, url: url, count: 100)
                let widget = makeWidget(server, directory, key: key, url: url)
                #expect(FileManager.default.createFile(atPath: directory.appending(path: "go").path, contents: nil))
                // The app's first write takes the sender lock.
                try await waitUntil("the app's first change") { widget.value >= 1 }
                var receipts: [WriteReceipt] = []
                for _ in 0..<50 {
                    receipts.append(widget.write { $0 += 1 })
                    try await Task.sleep(for: .milliseconds(2))
                }
                var outcomes: [WriteOutcome?] = []
                for receipt in receipts { outcomes.append(await receipt.outcome(timeout: .seconds(60))) }
                #expect(outcomes.allSatisfy { $0 == .delivered }, "\(outcomes.filter { $0 != .delivered }.prefix(3))")
                var held: Int?
                try await waitUntil("the server holds every increment") {
                    held = try? await server.value(Int.self, at: url)
                    return held == 150
                }
                #expect(held == 150, "the widget holds \(widget.value)")
                #expect(widget.statistics[0].sent == 0, "the app sent them")
                await app.kill()
                let conflicts = app.diagnostics.split(separator: "\n").filter { $0.hasPrefix("conflict") }
                #expect(conflicts.isEmpty, "conflicting writes: \(conflicts.prefix(5))")
            }
        }
    }

    /// An outcomes file that claims more entries than the key's journal has (left by a journal
    /// that was removed and started again, or damaged into another number) is believed by
    /// neither process: the widget's receipt is not answered from it, and the app publishes
    /// afresh, so the receipt resolves with what really happened.
    @Test func anOutcomesFileAheadOfTheJournalIsBelievedByNoOne() async throws {
        try await contending {
            try await RealHTTPServer.with(.apache) { server, directory in
                let key = uniqueKey("stale")
                let (app, widget, url) = try await appAndWidget(server, directory, key: key)

                #expect(Glibc.kill(app.process.processIdentifier, SIGSTOP) == 0)
                var stale = SharedOutcomes()
                stale.settle(through: 1_000_000, as: .rejected(reason: "a stale file"))
                let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
                try #require(SharedOutcomesFile(key: key, storage: storage)).write(stale)
                let receipt = widget.write { $0 = 100 }
                #expect(await receipt.outcome(timeout: .milliseconds(500)) == nil, "not answered from the stale file")
                #expect(Glibc.kill(app.process.processIdentifier, SIGCONT) == 0)
                #expect(await receipt.outcome(timeout: .seconds(30)) == .delivered)
                #expect(try await server.value(Int.self, at: url) == 100)
                await app.kill()
            }
        }
    }

    /// The app, launched, which wrote 1 and sent it to a new resource of `server`, and the widget,
    /// which read it: the app sends the key.
    private func appAndWidget(
        _ server: RealHTTPServer, _ directory: URL, key: String, serverWins: Bool = false
    ) async throws -> (app: SinksHelper, widget: SyncedState<Int>, url: URL) {
        let url = server.resource()
        let app = try await launchApp(server, directory, key: key, url: url, count: 1, serverWins: serverWins)
        #expect(app.firstLine == "ready 0")
        #expect(FileManager.default.createFile(atPath: directory.appending(path: "go").path, contents: nil))
        try await waitUntil("the app sends its change") { try await server.value(Int.self, at: url) == 1 }
        let widget = makeWidget(server, directory, key: key, url: url)
        try await waitUntil("the widget reads the app's change") { widget.value == 1 }
        return (app, widget, url)
    }

    /// The app: the helper's `sync-shared-count` of `key` in `directory`, synced to `url` (merging
    /// conflicts, or with `.serverWins`), which counts `count` times once the file `go` exists.
    private func launchApp(
        _ server: RealHTTPServer, _ directory: URL, key: String, url: URL, count: Int, serverWins: Bool = false
    ) async throws -> SinksHelper {
        try await SinksHelper.launch(
            [
                "sync-shared-count", directory.path, key, url.absoluteString, "\(count)",
                server.headers["Authorization"] ?? "-",
            ] + (serverWins ? ["server-wins"] : []))
    }

    /// The widget: this process's container of `key`, shared across processes with the app and
    /// synced to the same `url` with `.serverWins`.
    private func makeWidget(_ server: RealHTTPServer, _ directory: URL, key: String, url: URL) -> SyncedState<Int> {
        let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
        let sink = HTTPSyncSink<Int>(endpoint: url, timeout: .seconds(10), conflictPolicy: .serverWins) { request in
            for (field, value) in server.headers { request.setValue(value, forHTTPHeaderField: field) }
        }
        return SyncedState(0, key: key, storage: storage, sinks: [sink])
    }
}
