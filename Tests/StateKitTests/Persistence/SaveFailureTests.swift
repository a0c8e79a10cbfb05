import Foundation
import StateKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A failed save never lets old bytes win, and is reported once and in time.
@Suite struct SaveFailureTests {
    init() { DiagnosticsRecorder.start() }

    /// Whether this process may mount a filesystem (CI runs as root).
    static let canMount = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    /// A diagnostics handler that writes to the container whose save failed (semantics 29: user
    /// code runs after every lock is let go). In a child process, so that a crash fails one case:
    /// on a key shared across processes the handler ran under the container's lock and stopped the
    /// process ("lock re-entered"); on both, an `NSError`'s description (user info in no fixed
    /// order) made one lasting failure a new report at each write, and each report's write failed
    /// again: thousands of reports.
    @Test(arguments: ["shared", "plain"])
    func aDiagnosticsHandlerThatWritesToTheContainerRunsAfterItsLocks(storage: String) async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let child = try await SinksHelper.launch(["handler-writes", directory.url.path, uniqueKey(), storage])
        #expect(await child.exitStatus() == 0)
        let parts = child.firstLine.split(separator: " ")
        let reports = parts.count == 4 ? Int(parts[1]) ?? 0 : 0
        // The first save fails two ways on the shared path (the temporary file, then the directory).
        #expect((1...2).contains(reports), "\(child.firstLine)")
        #expect(parts.count == 4 && Int(parts[3]) == 6 + 100 * reports, "\(child.firstLine)")
    }

    /// The same for a failed append to an outbox's log, which is made under the container's lock
    /// of the write it logs: the report runs after it. Before, the handler's write re-entered the
    /// lock and stopped the process.
    @Test func aDiagnosticsHandlerThatWritesWhenTheOutboxCannotAppendRunsAfterTheWrite() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let child = try await SinksHelper.launch(["handler-writes-outbox", log.path, uniqueKey(), "-"])
        #expect(await child.exitStatus() == 0)
        // One failed append reported while the log cannot grow, whatever it is asked to append.
        #expect(child.firstLine == "reports 1 value 105")
    }

    // These tests sleep and retry for seconds: each runs on a thread of its own, not the test pool's.

    @Test(.enabled(if: canMount, "mounting a small tmpfs to fill needs root; this run is not root"))
    func aFullDiskNeverLetsTheOldFileWinAndTheNewestValueIsSavedOnceThereIsRoom() async throws {
        try await awayFromThePool { Result { try Self.fillTheDiskThenFreeIt() } }.get()
    }

    private static func fillTheDiskThenFreeIt() throws {
        let disk = try SmallFilesystem(kilobytes: 64)
        defer { disk.unmount() }
        let key = uniqueKey()
        let state = PersistedState("v0", key: key, storage: .file(disk.url))
        state.modify("v1")
        state.flush()
        #expect(state.saveError == nil)

        let filler = try disk.fill()
        let newest = String(repeating: "v2", count: 100)
        state.modify(newest)
        state.flush()
        let error = try #require(state.saveError as? POSIXError)
        #expect(error.code == .ENOSPC)
        #expect(state.value == newest)

        // Events with no change of content: the failed save's own temporary file came and went;
        // a touch of the stored file. Neither may bring the old value back.
        let stored = FileStateStorage.file(disk.url).fileURL(forKey: key).path
        #expect(utime(stored, nil) == 0)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(state.value == newest)

        try FileManager.default.removeItem(at: filler)
        state.flush()
        #expect(state.saveError == nil)
        let reopened = try #require(try FileStateStorage.file(disk.url).load(forKey: key))
        #expect(try JSONDecoder().decode(String.self, from: reopened) == newest)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.storageFailed])
    }

    @Test func aFailureThatPersistsIsReportedOnceAndAgainOnlyAfterASuccess() async throws {
        try await awayFromThePool { Result { try Self.failPersistentlyThenRecover() } }.get()
    }

    private static func failPersistentlyThenRecover() throws {
        let storage = FaultyStorage()
        let key = uniqueKey()
        let state = PersistedState(0, key: key, storage: storage)
        storage.failSaves(1_000)
        state ~> 1
        state.flush()
        state.flush()
        // The background retries (at 0.1, 0.2, 0.4 and 0.8 s) fail the same way.
        Thread.sleep(forTimeInterval: 1.6)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.storageFailed])

        storage.failSaves(0)
        state.flush()
        #expect(state.saveError == nil)
        #expect(try storage.base.load(forKey: key) == Data("1".utf8))

        storage.failSaves(1_000)
        state ~> 2
        state.flush()
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.storageFailed, .storageFailed])
    }

    @Test func flushReturnsWithTheFailurePublished() async {
        let published = await awayFromThePool {
            let storage = FaultyStorage()
            let state = PersistedState(0, key: uniqueKey("flushReturnsWithTheFailurePublished"), storage: storage)
            storage.failSaves(1_000)
            state ~> 1
            state.flush()
            return state.saveError != nil
        }
        #expect(published)
    }

    /// A value that does not encode (JSON has no NaN) is not saved, and its error stays through
    /// every flush until a value that encodes is saved; storage keeps the last value that did.
    @Test func anEncodeFailureStaysUntilASaveSucceeds() async throws {
        let outcome = await awayFromThePool { Self.failToEncodeThenRecover() }
        #expect(outcome.errorsAfterFlushes == [true, true, true])
        #expect(outcome.storedAfterFailure == 1.5)
        #expect(!outcome.errorAfterRecovery)
        #expect(outcome.storedAfterRecovery == 2.5)
    }

    private struct EncodeFailureOutcome: Sendable {
        var errorsAfterFlushes: [Bool] = []
        var storedAfterFailure: Double?
        var errorAfterRecovery = true
        var storedAfterRecovery: Double?
    }

    private static func failToEncodeThenRecover() -> EncodeFailureOutcome {
        let storage = InMemoryStateStorage()
        let key = uniqueKey("anEncodeFailureStaysUntilASaveSucceeds")
        let state = PersistedState(0.0, key: key, storage: storage)
        let stored = { (try? storage.load(forKey: key)).flatMap { try? JSONDecoder().decode(Double.self, from: $0) } }
        var outcome = EncodeFailureOutcome()
        state ~> 1.5
        state.flush()
        state ~> .nan
        for _ in 0..<3 {
            state.flush()
            outcome.errorsAfterFlushes.append(state.saveError != nil)
        }
        outcome.storedAfterFailure = stored()
        state ~> 2.5
        state.flush()
        outcome.errorAfterRecovery = state.saveError != nil
        outcome.storedAfterRecovery = stored()
        return outcome
    }

    @Test func aSlowFailedSaveNeverPublishesItsErrorOverANewerSuccess() async {
        await awayFromThePool { Self.raceFailedAndNewerSaves() }
    }

    private static func raceFailedAndNewerSaves() {
        for trial in 0..<50 {
            let storage = FaultyStorage()
            let state = PersistedState(0, key: "\(uniqueKey())-\(trial)", storage: storage)
            // The background save and flush's first attempt race for these; flush's next one succeeds.
            storage.failSaves(trial.isMultiple(of: 2) ? 1 : 2)
            state ~> 1
            if trial.isMultiple(of: 3) { Thread.sleep(forTimeInterval: 0.001) }
            state.flush()
            #expect(state.saveError == nil, "trial \(trial): a stale failure was published after flush")
        }
    }
}

/// A tmpfs of a few kilobytes, mounted for one test: a real filesystem that really fills up.
struct SmallFilesystem {
    let url: URL

    init(kilobytes: Int) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("StateKitTests-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", url.path)
    }

    /// Fills the filesystem with one file, until a write fails; returns the file.
    func fill() throws -> URL {
        let filler = url.appendingPathComponent("filler")
        let descriptor = open(filler.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 512)
        while write(descriptor, chunk, chunk.count) > 0 {}
        return filler
    }

    func unmount() {
        try? Self.run("/bin/umount", url.path)
        try? FileManager.default.removeItem(at: url)
    }

    private static func run(_ tool: String, _ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        guard hasExited(process, within: 60), process.terminationStatus == 0 else { throw POSIXError(.EPERM) }
    }
}
