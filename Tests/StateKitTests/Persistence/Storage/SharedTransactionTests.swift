import Foundation
import StateKitTesting
import Testing

@testable import StateKit  // to read a key's lock file marks (SharedKeyLock)

/// Semantics 30: transactions and undo over keys shared across processes (real child processes,
/// `statekit-testhelper shared-transfer`, `shared-sample`, `shared-transaction-…`) are
/// all-or-nothing across processes and across `kill -9`, and never stop the process.
///
/// Serialized: each test waits for its children on one of Swift concurrency's two threads here,
/// and two at once held both, stalling every other test's timers meanwhile.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SharedTransactionTests {
    init() { DiagnosticsRecorder.start() }

    /// Starts `count` children with `command` and the two keys, and lets them all go at once
    /// (``TestHelperProcess/startTogether(_:sourceLocation:_:)``).
    private func startTogether(
        _ count: Int, _ command: String, _ directory: TemporaryDirectory, _ keys: (String, String), _ more: String...
    ) throws -> [TestHelperProcess] {
        try TestHelperProcess.startTogether(count) { _ in [command, directory.url.path, keys.0, keys.1] + more }
    }

    private func shared(_ directory: TemporaryDirectory) -> FileStateStorage {
        .file(directory.url, sharedAcrossProcesses: true)
    }

    private func stored(_ directory: TemporaryDirectory, _ key: String) throws -> Int? {
        guard let data = try shared(directory).load(forKey: key) else { return nil }
        return try JSONDecoder().decode(Int.self, from: data)
    }

    private func keys() -> (String, String) {
        let key = uniqueKey()
        return (key + "-a", key + "-b")
    }

    /// Two containers of shared keys in a new directory (the caller cleans it up), the first at 100.
    private func twoKeysAt100(test: String = #function)
        -> (TemporaryDirectory, (String, String), PersistedState<Int>, PersistedState<Int>)
    {
        let directory = TemporaryDirectory()
        let key = uniqueKey(test)
        let keys = (key + "-a", key + "-b")
        let a = PersistedState(0, key: keys.0, storage: shared(directory))
        let b = PersistedState(0, key: keys.1, storage: shared(directory))
        a ~> 100
        return (directory, keys, a, b)
    }

    /// The intent records left in `directory`.
    private func records(_ directory: TemporaryDirectory) -> [String] {
        directory.fileNames.filter { $0.hasSuffix(".transaction") }
    }

    /// Three processes move amounts between two keys, 300 transactions each, while a fourth reads
    /// both 1,000 times: every read sees the exact sum, and the end values are exact.
    @Test func transfersBetweenSharedKeysKeepTheSumExactAcrossProcesses() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let keys = keys()
            let a = PersistedState(0, key: keys.0, storage: shared(directory))
            let b = PersistedState(0, key: keys.1, storage: shared(directory))
            a ~> 1_000
            let started = ContinuousClock.now
            let movers = try startTogether(3, "shared-transfer", directory, keys, "300")
            let sampler = try startTogether(1, "shared-sample", directory, keys, "1000")[0]
            #expect(sampler.nextLine(startingWith: "sums") == "sums 1000")
            for mover in movers { #expect(mover.nextLine(startingWith: "done") == "done") }
            print("shared keys, 3 x 300 transfers and 1,000 samples took \(ContinuousClock.now - started)")
            // Each mover moves 1...5 from a to b on even turns, back on odd ones.
            let net = (0..<300).reduce(0) { net, index in net + (index.isMultiple(of: 2) ? 1 : -1) * (index % 5 + 1) }
            #expect(try stored(directory, keys.0) == 1_000 - 3 * net)
            #expect(try stored(directory, keys.1) == 3 * net)
            #expect(withStateTransaction { (a.value, b.value) } == (1_000 - 3 * net, 3 * net))
            #expect(records(directory).isEmpty)
        }
    }

    @Test func processKilledInsideATransactionBodyChangesNothing() async throws {
        try await offThePool {
            let (directory, keys, a, b) = twoKeysAt100()
            defer { directory.cleanUp() }
            let holder = try startTogether(1, "shared-transaction-hold", directory, keys)[0]
            #expect(holder.nextLine(startingWith: "inside") == "inside")
            holder.kill()
            #expect(try stored(directory, keys.0) == 100)
            #expect(try stored(directory, keys.1) == nil)
            let mover = try startTogether(1, "shared-transfer", directory, keys, "1")[0]
            #expect(mover.nextLine(startingWith: "done") == "done")
            #expect(try stored(directory, keys.0) == 99)
            #expect(try stored(directory, keys.1) == 1)
            #expect(withStateTransaction { (a.value, b.value) } == (99, 1))
        }
    }

    /// A process killed after its commit replaced one of two files left them half-committed on
    /// disk, with an intent record: the next process that takes one of the keys completes it.
    @Test func processKilledAfterItsFirstFileReplaceIsCompletedByTheNextProcess() async throws {
        try await offThePool {
            let (directory, keys, a, b) = twoKeysAt100()
            defer { directory.cleanUp() }
            let stopped = try startTogether(1, "shared-transaction-stop", directory, keys)[0]
            #expect(stopped.nextLine(startingWith: "replaced") == "replaced")
            // On disk, one key is new and the other old: only the record makes the commit whole.
            let onDisk = [try stored(directory, keys.0), try stored(directory, keys.1)]
            #expect(onDisk == [95, nil] || onDisk == [100, 5])
            #expect(records(directory).count == 1)
            stopped.kill()

            let sampler = try startTogether(1, "shared-sample", directory, keys, "20")[0]
            #expect(sampler.nextLine(startingWith: "sums") == "sums 100")
            #expect(try stored(directory, keys.0) == 95)
            #expect(try stored(directory, keys.1) == 5)
            #expect(records(directory).isEmpty)
            #expect(withStateTransaction { (a.value, b.value) } == (95, 5))
            let lock = SharedKeyLock(path: shared(directory).lockFileURL(forKey: keys.0).path)
            lock.lock()
            #expect(lock.pendingTransaction == 0)
            lock.unlock()
        }
    }

    /// The process killed after its first replace is completed by this process too, through the
    /// key lock its own writes take.
    @Test func writeAfterAKilledCommitStartsFromTheCompletedTransaction() async throws {
        try await offThePool {
            let (directory, keys, a, b) = twoKeysAt100()
            defer { directory.cleanUp() }
            let stopped = try startTogether(1, "shared-transaction-stop", directory, keys)[0]
            #expect(stopped.nextLine(startingWith: "replaced") == "replaced")
            stopped.kill()
            b.modify { $0 += 1 }
            #expect(b.value == 6)
            #expect(try stored(directory, keys.1) == 6)
            #expect(try stored(directory, keys.0) == 95)
            #expect(withStateTransaction { (a.value, b.value) } == (95, 6))
            #expect(records(directory).isEmpty)
        }
    }

    /// A commit killed while it cleared its marks left one key marked: a transaction that holds
    /// the other key already completes it without waiting for itself, and leaves the cleared key
    /// as it is.
    @Test func commitKilledWhileClearingItsMarksIsCompletedByAHolderOfItsOtherKey() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let keys = keys()
            let storage = shared(directory)
            let a = PersistedState(0, key: keys.0, storage: storage)
            let b = PersistedState(0, key: keys.1, storage: storage)
            let (lockA, lockB) = (storage.lockFileURL(forKey: keys.0).path, storage.lockFileURL(forKey: keys.1).path)
            let record = SharedTransactionRecord(writes: [
                .init(file: storage.fileURL(forKey: keys.0).path, lock: lockA, bytes: Data("1".utf8)),
                .init(file: storage.fileURL(forKey: keys.1).path, lock: lockB, bytes: Data("2".utf8)),
            ])
            try JSONEncoder().encode(record).write(
                to: directory.url.appending(path: SharedTransactionRecord.fileName(id: record.id)))
            // Key a's mark was cleared (and a is still 0: a later write replaced it); b's was not.
            let marked = SharedKeyLock(path: lockB)
            marked.lock()
            try marked.markPendingTransaction(record.id, durably: false)
            marked.unlock()

            let done = DispatchSemaphore(value: 0)
            Thread {
                withStateTransaction {
                    a.modify { $0 += 10 }
                    b.modify { $0 += 10 }
                }
                done.signal()
            }.start()
            try #require(done.wait(timeout: .now() + 30) == .success, "the transaction waited for itself")
            #expect(withStateTransaction { (a.value, b.value) } == (10, 12))
            #expect(try stored(directory, keys.0) == 10)
            #expect(try stored(directory, keys.1) == 12)
            #expect(records(directory).isEmpty)
        }
    }

    @Test func transactionOverASharedKeyInAChildCommits() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let key = uniqueKey()
            let lines = try TestHelperProcess.run(["shared-transaction", directory.url.path, key])
            #expect(lines == ["ready", "done 1"])
            #expect(try stored(directory, key) == 1)
        }
    }

    @Test func transactionOverSharedAndPlainContainersAppliesAllOrNothing() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let keys = keys()
            let a = PersistedState(10, key: keys.0, storage: shared(directory))
            let plain = State(0, key: uniqueKey())
            let changes = Collector<StateChange<Int>>()
            let subscription = a.subscribeChanges { changes.append($0) }
            defer { subscription.cancel() }
            withStateTransaction {
                a.modify { $0 -= 3 }
                plain.modify { $0 += 3 }
            }
            #expect((a.value, plain.value) == (7, 3))
            let committed = try stored(directory, keys.0)
            #expect(committed == 7)
            #expect(changes.all.map(\.newValue) == [7])
            // A body that throws applies nothing, here or on disk.
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try withStateTransaction {
                    a.modify { $0 -= 3 }
                    throw Refused()
                }
            }
            #expect(a.value == 7)
            let unchanged = try stored(directory, keys.0)
            #expect(unchanged == 7)
        }
    }

    @Test func undoAndRedoOfASharedKeyWriteTheFileAsNewChanges() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let keys = keys()
            let count = PersistedState(0, key: keys.0, storage: shared(directory))
            let other = PersistedState(0, key: keys.1, storage: shared(directory))
            let history = StateHistory(tracking: count, other)
            count ~> 1
            withStateTransaction {
                count ~> 2
                other ~> 2
            }
            #expect(history.canUndo)
            #expect(history.undo())
            #expect((count.value, other.value) == (1, 0))
            #expect(try stored(directory, keys.0) == 1)
            #expect(try stored(directory, keys.1) == 0)
            #expect(history.redo())
            #expect((count.value, other.value) == (2, 2))
            #expect(try stored(directory, keys.0) == 2)
            #expect(try stored(directory, keys.1) == 2)
            #expect(history.undo())
            #expect(history.undo())
            #expect((count.value, other.value) == (0, 0))
            #expect(try stored(directory, keys.0) == 0)
            // Another process reads the undone values.
            let sampler = try startTogether(1, "shared-sample", directory, keys, "1")[0]
            #expect(sampler.nextLine(startingWith: "sums") == "sums 0")
        }
    }

    /// Undo after another process changed the key: if its change reached this process first, it is
    /// never reverted (semantics 18: the step is dropped); if the undo comes first, the undo brings
    /// the other process's value in and restores the step's old value over it, as a new change
    /// that every process reads. Either way nothing stops, and memory and file agree.
    @Test func undoAfterAnotherProcessChangedTheKey() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let keys = keys()
        let count = PersistedState(0, key: keys.0, storage: shared(directory))
        let history = StateHistory(tracking: count)
        count ~> 1
        let versionBefore = count.version

        // Undone at once: this process has likely not heard of the other's change yet.
        let first = try TestHelperProcess.run(["shared-increment", directory.url.path, keys.0, "1"], input: "go")
        #expect(first.last == "done 2")
        let undid = history.undo()
        print("shared key, undo right after another process's change: \(undid ? "restored 0 over it" : "step dropped")")
        if undid {
            #expect(count.value == 0)
            #expect(count.version > versionBefore + 1)
            #expect(try stored(directory, keys.0) == 0)
            #expect(history.canRedo)
        } else {
            #expect(count.value == 2)
            #expect(!history.canUndo)
        }

        // Undone after the other process's change arrived: the step is dropped.
        // Recorded once the write is delivered, which may wait behind the delivery of an outside
        // change (the first undo's, or a late one of the other process) on another thread.
        count ~> 10
        await eventually("the step of writing 10") { history.canUndo }
        let second = try TestHelperProcess.run(["shared-increment", directory.url.path, keys.0, "1"], input: "go")
        #expect(second.last == "done 11")
        await eventually("the other process's change") { count.value == 11 }
        #expect(!history.canUndo)
        #expect(!history.undo())
        #expect(count.value == 11)
        #expect(try stored(directory, keys.0) == 11)
    }
}
