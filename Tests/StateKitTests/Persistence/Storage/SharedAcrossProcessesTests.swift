import Foundation
import StateKitTesting
import Testing

@testable import StateKit  // to see that an unshared cell has no write gate

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Semantics 25: with `FileStateStorage.file(_:sharedAcrossProcesses: true)`, every write of a
/// key is atomic across processes (real child processes, `statekit-testhelper shared-…`), another
/// process's change arrives within 250 ms, a process killed inside `modify` blocks nobody and
/// leaves the value before its write; with `false`, nothing changes.
@Suite(.timeLimit(.minutes(3))) struct SharedAcrossProcessesTests {
    init() { DiagnosticsRecorder.start() }

    /// Starts the helper with `command` (``TestHelperProcess/watched(_:)``).
    private func start(_ command: String, _ directory: TemporaryDirectory, _ key: String, _ more: String...) throws
        -> TestHelperProcess
    {
        try TestHelperProcess.watched([command, directory.url.path, key] + more)
    }

    /// Starts `count` children with `command`, and lets them all go at once
    /// (``TestHelperProcess/startTogether(_:sourceLocation:_:)``).
    private func startTogether(
        _ count: Int, _ command: String, _ directory: TemporaryDirectory, _ key: String,
        arguments: (Int) -> [String]
    ) throws -> [TestHelperProcess] {
        try TestHelperProcess.startTogether(count) { [command, directory.url.path, key] + arguments($0) }
    }

    private func shared(_ directory: TemporaryDirectory) -> FileStateStorage {
        .file(directory.url, sharedAcrossProcesses: true)
    }

    private func stored<Value: Decodable>(_ type: Value.Type, _ directory: TemporaryDirectory, _ key: String) throws
        -> Value?
    {
        guard let data = try shared(directory).load(forKey: key) else { return nil }
        return try JSONDecoder().decode(Value.self, from: data)
    }

    /// A key move takes the locks of the key and its earlier keys: moving away, again and again, a
    /// key that another process keeps incrementing neither loses nor repeats an increment (what the
    /// moves took plus what the key holds at the end is every increment).
    @Test func keyMovesRacingAnotherProcessLoseNoIncrement() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let increments = 3_000
        let child = try #require(
            try startTogether(1, "shared-increment", directory, key) { _ in ["\(increments)"] }.first)
        var moved = 0
        var moves = 0
        while child.process.isRunning {
            moves += 1
            moved +=
                PersistedState(0, key: "\(key)-moved-\(moves)", storage: shared(directory), previousKeys: [key]).value
        }
        let done = try #require(child.nextLine(startingWith: "done"))
        #expect(Int(done.dropFirst("done ".count)) != nil)
        #expect(moves > 1)
        let left = try stored(Int.self, directory, key) ?? 0
        #expect(moved + left == increments, "\(moves) moves took \(moved), the key holds \(left)")
    }

    @Test func fourProcessesIncrementingLoseNoIncrement() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let perProcess = 1_500
        let children = try startTogether(4, "shared-increment", directory, key) { _ in ["\(perProcess)"] }
        var finals: [Int] = []
        for child in children {
            let done = try #require(child.nextLine(startingWith: "done"))
            finals.append(try #require(Int(done.dropFirst("done ".count))))
            #expect(child.waitForExit() && child.process.terminationStatus == 0)
        }
        // Each saw its own last increment on top of everyone's earlier ones; the last to finish
        // saw all of them.
        #expect(finals.max() == 4 * perProcess)
        #expect(try stored(Int.self, directory, key) == 4 * perProcess)

        // A relaunch starts from the total, and a container here sees it too.
        let relaunched = try startTogether(1, "shared-increment", directory, key) { _ in ["1"] }
        #expect(relaunched[0].nextLine(startingWith: "done") == "done \(4 * perProcess + 1)")
        relaunched[0].waitForExit()
        let here = PersistedState(0, key: key, storage: shared(directory))
        #expect(here.value == 4 * perProcess + 1)
        here.modify { $0 += 1 }
        #expect(try stored(Int.self, directory, key) == 4 * perProcess + 2)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
    }

    @Test func threeProcessesAppendingToAStructLoseNoEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let perProcess = 400
        let tags = ["a", "b", "c"]
        let children = try startTogether(3, "shared-append", directory, key) { ["\(perProcess)", tags[$0]] }
        for child in children {
            #expect(child.nextLine(startingWith: "done") != nil)
            #expect(child.waitForExit() && child.process.terminationStatus == 0)
        }
        let log = try #require(try stored(SharedLogValue.self, directory, key))
        #expect(log.entries.count == 3 * perProcess)
        for tag in tags {
            // Every entry of each process, in the order it appended them.
            #expect(log.entries.filter { $0.hasPrefix("\(tag)-") } == (0..<perProcess).map { "\(tag)-\($0)" })
        }

        let relaunched = try startTogether(1, "shared-append", directory, key) { _ in ["1", "d"] }
        #expect(relaunched[0].nextLine(startingWith: "done") == "done \(3 * perProcess + 1)")
        relaunched[0].waitForExit()
        #expect(try stored(SharedLogValue.self, directory, key)?.entries.last == "d-0")
    }

    @Test func anotherProcessesChangeReachesSubscribersWithin250Milliseconds() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let count = PersistedState(0, key: key, storage: shared(directory))
        let watcher = try start("shared-watch", directory, key)
        #expect(watcher.nextLine(startingWith: "value") == "value 0")

        // This process writes, the watcher process hears it.
        var latencies: [Duration] = []
        for expected in 1...20 {
            count.modify { $0 += 1 }
            let written = ContinuousClock.now
            #expect(watcher.nextLine(startingWith: "value") == "value \(expected)")
            latencies.append(ContinuousClock.now - written)
        }
        latencies.sort()
        print("shared key, another process hears a modify: median \(latencies[10]), worst \(latencies[19])")
        #expect(latencies[10] < .milliseconds(250))
        #expect(latencies[19] < (isThreadSanitized ? .seconds(2) : .milliseconds(500)))

        // Another process writes, this one hears it, and relaunches continue from it.
        let heard = count.record()
        #expect(try await heard.next() == [20])
        let writer = try startTogether(1, "shared-increment", directory, key) { _ in ["1"] }
        let started = ContinuousClock.now
        #expect(try await heard.next(timeout: .seconds(60)) == [21])
        print("shared key, this process hears another's modify after \(ContinuousClock.now - started) (incl. launch)")
        writer[0].waitForExit()
        watcher.send("")
        #expect(watcher.nextLine(startingWith: "value") == "value 21")
        watcher.kill()
        let relaunched = try start("shared-watch", directory, key)
        #expect(relaunched.nextLine(startingWith: "value") == "value 21")
        relaunched.kill()
        #expect(heard.values == [20, 21])
    }

    @Test func processKilledInsideModifyBlocksNobodyAndLeavesTheValueBefore() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let count = PersistedState(0, key: key, storage: shared(directory))
        count ~> 5
        let holder = try startTogether(1, "shared-hold", directory, key) { _ in [] }[0]
        #expect(holder.nextLine(startingWith: "inside") == "inside 5")

        // While the child holds the key inside its body, a write here waits for it.
        let wrote = DispatchSemaphore(value: 0)
        let writer = Thread {
            count.modify { $0 += 10 }
            wrote.signal()
        }
        writer.start()
        #expect(wrote.wait(timeout: .now() + 0.3) == .timedOut)
        #expect(count.value == 5)

        holder.kill()
        let killed = ContinuousClock.now
        #expect(holder.process.terminationReason == .uncaughtSignal)
        #expect(wrote.wait(timeout: .now() + (isThreadSanitized ? 5 : 1)) == .success)
        print("shared key, a write waiting for a killed holder went on after \(ContinuousClock.now - killed)")
        // The killed write never landed: 5 + 10, not 5 + 1 + 10.
        #expect(count.value == 15)
        #expect(try stored(Int.self, directory, key) == 15)

        // Another process goes on too, from the same value, and so does a relaunch of the holder.
        let next = try startTogether(1, "shared-increment", directory, key) { _ in ["1"] }[0]
        #expect(next.nextLine(startingWith: "done") == "done 16")
        next.waitForExit()
        let relaunched = try startTogether(1, "shared-hold", directory, key) { _ in [] }[0]
        #expect(relaunched.nextLine(startingWith: "inside") == "inside 16")
        relaunched.kill()
        #expect(try stored(Int.self, directory, key) == 16)
    }

    @Test func everyWriteIsInTheFileWhenItReturns() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let count = PersistedState(
            0, key: key, storage: shared(directory),
            validator: { _, proposed in
                guard proposed >= 0 else { throw Negative() }
            })
        #expect(count.persistence?.cell.hasWriteGate == true)
        count.modify { $0 += 1 }
        #expect(try stored(Int.self, directory, key) == 1)
        count ~> 2
        #expect(try stored(Int.self, directory, key) == 2)
        count ~> { $0 += 1 }
        #expect(try stored(Int.self, directory, key) == 3)
        try count.set(4)
        #expect(try stored(Int.self, directory, key) == 4)
        // A refused write changes neither the value nor the file.
        #expect(throws: RejectedWriteError.self) { try count.set(-1) }
        #expect(count.value == 4)
        #expect(try stored(Int.self, directory, key) == 4)
        #expect(count.version == 4)
        // Written outside StateKit: the next write starts from it.
        try Data("40".utf8).write(to: shared(directory).fileURL(forKey: key))
        count.modify { $0 += 1 }
        #expect(count.value == 41)
        #expect(try stored(Int.self, directory, key) == 41)
    }

    /// A failed save and a later one that succeeds, on two threads of one shared key: the error
    /// goes once storage holds the newest value, whichever thread's report is published last.
    /// (Each save's outcome used to be published late and out of order: the error of an earlier
    /// failure, published after a later success, stood over a saved value.)
    @Test(.contendingTimeLimit) func aSaveErrorGoesOnceTheNewestValueIsSavedUnderContention() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let rounds = 300
        let stuck = await contending {
            var stuck = 0
            for round in 0..<rounds {
                let ratio = PersistedState(0.0, key: "\(key)-\(round)", storage: self.shared(directory))
                // One thread writes a value JSON cannot encode, the other a good one, at once.
                onThreads(2) { index in ratio ~> (index == 0 ? .nan : Double(round)) }
                ratio ~> (Double(round) + 0.5)
                ratio.flush()
                if ratio.saveError != nil { stuck += 1 }
            }
            return stuck
        }
        #expect(stuck == 0, "\(stuck) of \(rounds) keys kept a save error over their saved newest value")
    }

    /// The cell's value goes back to bytes it wrote before another process's change, its save
    /// fails, and the retry writes them. Before, the value's own fingerprint of the file missed
    /// the change the gate read from the journal: the retry took the file for holding the value
    /// already, wrote nothing, and called it saved, so the other process's value stayed on disk.
    @Test func aRetriedSaveWritesAValueTheFileHeldBeforeAnotherProcesssChange() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try BreakableStore(in: directory)
        let storage = store.storage
        let key = uniqueKey()
        let count = PersistedState(0, key: key, storage: storage)
        count ~> 1_000
        // The child is waited for off the pool: under the sanitizer it takes a minute to start.
        try await offThePool {
            let other = try TestHelperProcess.watched(["shared-increment", store.url.path, key, "1"])
            other.send("go")
            #expect(other.nextLine(startingWith: "done") == "done 1001")
        }
        await eventually("the other process's change arrives") { count.value == 1_001 }
        // The storage breaks, and the value goes back to 1,000.
        try store.break()
        count ~> 1_000
        #expect(count.saveError != nil)
        // Mended, holding the other process's value, as the failed save left it.
        try store.mend(holding: Data("1001".utf8), forKey: key)
        await awayFromThePool { count.flush() }
        #expect(count.saveError == nil)
        let stored = try storage.load(forKey: key).flatMap { String(decoding: $0, as: UTF8.self) }
        #expect(stored == "1000")
    }

    /// `flush()` returns once storage holds the newest value, also while another thread holds the
    /// key. Before, it returned at once whenever any thread of the process held the key, taking
    /// that thread for the one saving the value: here the newest value's save had failed, and
    /// `flush()` returned with nothing in storage.
    @Test func flushWaitsForTheKeyAnotherThreadHolds() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try BreakableStore(in: directory)
        let count = PersistedState(0, key: uniqueKey(), storage: store.storage)
        count ~> 1
        // The storage breaks for one write, which is not saved.
        try store.break()
        count ~> 2
        let (stored, value) = try await awayFromThePool {
            // Another thread holds the key, inside a modify body, from before the storage is
            // mended (so no retry saves the value meanwhile) until 300 ms into the flush.
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            Thread {
                count.modify { value in
                    inside.signal()
                    release.wait()
                    value += 1
                }
            }.start()
            inside.wait()
            return Result {
                try store.mend()
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
                count.flush()
                let stored = try store.storage.load(forKey: count.key).map { String(decoding: $0, as: UTF8.self) }
                return (stored, count.value)
            }
        }.get()
        #expect(stored == "\(value)")
        #expect(value == 3)
    }

    @Test func badBytesWrittenOutsideAreKeptAsideBeforeAWriteReplacesThem() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let count = PersistedState(0, key: key, storage: shared(directory))
        count ~> 3
        try Data("{not a number".utf8).write(to: shared(directory).fileURL(forKey: key))
        count.modify { $0 += 1 }
        #expect(count.value == 4)
        #expect(try stored(Int.self, directory, key) == 4)
        let kept = directory.fileNames.filter { $0.hasPrefix("\(key).corrupt-") }
        #expect(kept.count == 1)
        let keptBytes = try kept.first.map { try Data(contentsOf: directory.url.appending(path: $0)) }
        #expect(keptBytes == Data("{not a number".utf8))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind).contains(.decodingFailed))
    }

    @Test func readingASharedKeyInATransactionIsASnapshot() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let count = PersistedState(7, key: key, storage: shared(directory))
        let plain = State(1, key: uniqueKey())
        withStateTransaction { plain.modify { $0 += count.value } }
        #expect(plain.value == 8)
    }

    @Test func unsharedStorageKeepsTodaysBehaviour() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        #expect(!FileStateStorage(directory: directory.url).isSharedAcrossProcesses)
        #expect(!FileStateStorage.file(directory.url).isSharedAcrossProcesses)
        #expect(!FileStateStorage(directory: directory.url, sharedAcrossProcesses: false).isSharedAcrossProcesses)
        #expect(FileStateStorage(directory: directory.url, sharedAcrossProcesses: true).isSharedAcrossProcesses)
        let count = PersistedState(0, key: key, storage: .file(directory.url, sharedAcrossProcesses: false))
        // No gate: writes take the engine's own paths, and saves are coalesced off the thread.
        #expect(count.persistence?.cell.hasWriteGate == false)
        for _ in 0..<1_000 { count.modify { $0 += 1 } }
        count.flush()
        #expect(try stored(Int.self, directory, key) == 1_000)
        #expect(directory.fileNames == ["\(key).json"])
        // A transaction over it is fine.
        withStateTransaction { count.modify { $0 += 1 } }
        #expect(count.value == 1_001)
    }
}

/// `SharedLog` of `statekit-testhelper`, as the tests decode it.
private struct SharedLogValue: Decodable {
    var title: String
    var entries: [String]
}

private struct Negative: Error {}

/// Shared file storage in a directory of its own that a test can break (the directory becomes a
/// file: every write fails, for root too) and mend (a directory again).
private struct BreakableStore: Sendable {
    let url: URL
    let storage: FileStateStorage

    init(in directory: TemporaryDirectory) throws {
        url = directory.url.appending(path: "store", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        storage = .file(url, sharedAcrossProcesses: true)
    }

    /// Where what the store's path held is swapped aside to.
    private var aside: URL { url.deletingLastPathComponent().appending(path: "aside") }

    /// A file takes the directory's place, in one step: removed first, the directory would be
    /// missing for a moment, and a check of the key then would take its value for deleted.
    func `break`() throws {
        try Data("not a directory".utf8).write(to: aside)
        try #require(FileReplacement.exchange(aside.path, url.path))
        try FileManager.default.removeItem(at: aside)
    }

    /// Makes the store a directory again, empty or holding `data` as the file of `key` from the
    /// moment it is one (made aside and swapped into place in one step), so that no save retried
    /// meanwhile finds it empty, and no check finds it missing.
    func mend(holding data: Data? = nil, forKey key: String = "") throws {
        try FileManager.default.createDirectory(at: aside, withIntermediateDirectories: true)
        if let data { try data.write(to: FileStateStorage.file(aside).fileURL(forKey: key)) }
        try #require(FileReplacement.exchange(aside.path, url.path))
        try FileManager.default.removeItem(at: aside)
    }
}
