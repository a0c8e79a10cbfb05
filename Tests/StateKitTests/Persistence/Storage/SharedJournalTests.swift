import Foundation
import StateKitTesting
import Testing

@testable import StateKit  // to read the journal's file name (SharedKeyJournal)

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Semantics 31: every change another process makes to a shared key reaches `subscribeChanges`
/// as its own change, in order (real child processes); a process further behind than the journal
/// gets one change and a diagnostic; a damaged journal tail is reported, ignored and cut off.
@Suite(.contendingTimeLimit) struct SharedJournalTests {
    init() { DiagnosticsRecorder.start() }

    /// Runs `shared-increment` children adding `count` each, all at once, until they are done.
    private func increment(_ processes: Int, by count: Int, _ directory: URL, _ key: String) throws {
        let children = try TestHelperProcess.startTogether(processes) { _ in
            ["shared-increment", directory.path, key, String(count)]
        }
        for child in children {
            #expect(child.nextLine(startingWith: "done") != nil)
            child.waitForExit()
        }
    }

    private func shared(_ directory: TemporaryDirectory) -> FileStateStorage {
        .file(directory.url, sharedAcrossProcesses: true)
    }

    /// A counter of a new shared key in `directory`, and every change its subscriber got.
    private func subscribedCounter(in directory: TemporaryDirectory, test: String = #function)
        -> (String, PersistedState<Int>, Collector<StateChange<Int>>, Subscription)
    {
        let key = uniqueKey(test)
        let count = PersistedState(0, key: key, storage: shared(directory))
        let changes = Collector<StateChange<Int>>()
        return (key, count, changes, count.subscribeChanges { changes.append($0) })
    }

    /// Waits, bounded, until `changes` holds `count` changes.
    private func waitFor(_ count: Int, _ changes: Collector<StateChange<Int>>) async {
        await eventually("\(count) changes (have \(changes.count))") { changes.count >= count }
    }

    @Test func twentyProcessesIncrementingReachASubscriberOneChangeAtATime() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let (key, count, changes, subscription) = subscribedCounter(in: directory)
        defer { subscription.cancel() }
        // In its turn: twenty children at once hold a hundred descriptors, which a test that counts
        // the process's descriptors would take for its own.
        let url = directory.url
        let incremented = await contending { Result { try increment(20, by: 10, url, key) } }
        try incremented.get()
        await waitFor(200, changes)
        let received = changes.all
        #expect(received.count == 200)
        #expect(received.map(\.oldValue) == Array(0..<200))
        #expect(received.map(\.newValue) == Array(1...200))
        #expect(received.allSatisfy { $0.origin == .external })
        #expect(received.map(\.version) == received.map(\.version).sorted())
        #expect(count.value == 200)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
    }

    /// A process that writes the key too delivers the others' changes before its own write, each
    /// on its own, instead of taking them in with it.
    @Test func aProcessThatWritesTooGetsEachOtherProcessesChangeOnItsOwn() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let (key, count, changes, subscription) = subscribedCounter(in: directory)
        defer { subscription.cancel() }
        let url = directory.url
        let wrote = DispatchSemaphore(value: 0)
        Thread {
            for _ in 0..<100 { count.modify { $0 += 1 } }
            wrote.signal()
        }.start()
        try increment(4, by: 25, url, key)
        #expect(wrote.wait(timeout: .now() + TestHelperProcess.bound) == .success)
        await waitFor(200, changes)
        let received = changes.all
        #expect(received.map(\.oldValue) == Array(0..<200))
        #expect(received.map(\.newValue) == Array(1...200))
        #expect(received.filter { $0.origin == .local }.count == 100)
        #expect(received.filter { $0.origin == .external }.count == 100)
    }

    /// A writer that takes the key while it is behind the journal (by default after ten catch-ups
    /// in a row, so that a stream of changes cannot hold its write up; here on every write that
    /// finds the journal moved) still delivers each other process's change on its own, in order,
    /// before its own.
    @Test func aWriterThatTakesTheKeyWhileBehindGetsEachChangeOnItsOwn() async throws {
        // In its turn: five children at once load a 2-core machine for the other tests.
        let received = try await contending { Result { try Self.writeWhileBehind() } }.get()
        #expect(received.map(\.old) == Array(0..<200))
        #expect(received.map(\.new) == Array(1...200))
        #expect(received.filter { $0.origin == "local" }.count == 100)
        #expect(received.filter { $0.origin == "external" }.count == 100)
    }

    /// Runs ``aWriterThatTakesTheKeyWhileBehindGetsEachChangeOnItsOwn()``'s processes, and returns
    /// every change the writer's subscriber got.
    private static func writeWhileBehind() throws -> [(old: Int, new: Int, origin: String)] {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let path = directory.url.path
        let children = try TestHelperProcess.startTogether(5) { index in
            index == 0 ? ["shared-write-subscribe", path, key, "100"] : ["shared-increment", path, key, "25"]
        }
        let writer = children[0]
        defer { writer.kill() }
        var received: [(old: Int, new: Int, origin: String)] = []
        // The change to 200 is the last: every process's writes are in.
        while received.last?.new != 200, let line = writer.nextLine(startingWith: "change") {
            let fields = line.split(separator: " ")
            received.append((Int(fields[1]) ?? -1, Int(fields[2]) ?? -1, String(fields[3])))
        }
        for child in children.dropFirst() {
            #expect(child.nextLine(startingWith: "done") != nil)
            child.waitForExit()
        }
        return received
    }

    @Test func syncedStatesSinkGetsEachChangeOfOtherProcesses() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        let count = SyncedState(0, key: key, storage: shared(directory), sinks: [sink])
        try increment(5, by: 10, directory.url, key)
        let received = try await sink.next(50, timeout: .seconds(isThreadSanitized ? 120 : 60))
        #expect(received.map(\.newValue) == Array(1...50))
        #expect(received.allSatisfy { $0.origin == .external })
        #expect(count.value == 50)
    }

    @Test func readerFurtherBehindThanTheBacklogGetsOneChangeAndADiagnostic() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let key = uniqueKey()
            let reader = try TestHelperProcess.watched(["shared-subscribe-changes", directory.url.path, key])
            #expect(reader.nextLine() == "ready")
            kill(reader.process.processIdentifier, SIGSTOP)
            try increment(1, by: 5_000, directory.url, key)
            kill(reader.process.processIdentifier, SIGCONT)
            #expect(reader.nextLine(startingWith: "diagnostic")?.hasPrefix("diagnostic changes-missed") == true)
            #expect(reader.nextLine(startingWith: "change") == "change 0 5000 external")
            // Nothing else arrives: the next write is the next change.
            try increment(1, by: 1, directory.url, key)
            #expect(reader.nextLine(startingWith: "change") == "change 5000 5001 external")
            reader.send("count")
            #expect(reader.nextLine(startingWith: "count") == "count 2")
            reader.kill()
            // The journal is bounded: at most twice the backlog.
            let journal = SharedKeyJournal(forFileAt: shared(directory).fileURL(forKey: key).path)
            let size = try FileManager.default.attributesOfItem(atPath: journal.path)[.size] as? Int ?? 0
            #expect(size < 2 * 1_000 * (20 + 5) + 12)
        }
    }

    /// A writer killed in the middle of its journal append leaves a torn tail (here: garbage, with
    /// the key's file replaced as that writer had): the reader reports it, takes the file's value
    /// as one change, and reads every later append.
    @Test func damagedJournalTailIsReportedIgnoredAndCutOff() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let (key, count, changes, subscription) = subscribedCounter(in: directory)
        defer { subscription.cancel() }
        try increment(1, by: 1, directory.url, key)
        await waitFor(1, changes)

        let journal = SharedKeyJournal(forFileAt: shared(directory).fileURL(forKey: key).path)
        let handle = try #require(FileHandle(forWritingAtPath: journal.path))
        handle.seekToEndOfFile()
        handle.write(Data([0x2a, 0, 0, 0, 7, 7, 7, 7, 7]))
        handle.closeFile()
        try Data("7".utf8).write(to: shared(directory).fileURL(forKey: key), options: .atomic)
        await waitFor(2, changes)
        await eventually("the damaged tail reported") {
            DiagnosticsRecorder.diagnostics(involving: key).contains { $0.message.contains("damaged tail") }
        }

        try increment(1, by: 2, directory.url, key)
        await waitFor(4, changes)
        #expect(changes.all.map { [$0.oldValue, $0.newValue] } == [[0, 1], [1, 7], [7, 8], [8, 9]])
        #expect(count.value == 9)
    }
}
