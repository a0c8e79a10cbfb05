import Foundation
import StateKit
import StateKitTesting
import Testing

/// A small app model for key-path recording.
private struct RecorderAppModel: Sendable, Equatable {
    struct User: Sendable, Equatable {
        var name: String
        var age: Int
    }

    var user = User(name: "Ann", age: 30)
    var theme = "light"
}

@Suite struct StateRecorderTests {
    @Test func recordsCurrentValueThenEachChangeInOrder() {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        counter ~> 1
        counter.modify { $0 += 1 }
        counter ~> 2
        #expect(counts.values == [0, 1, 2])
        #expect(counts.latest == 2)
        #expect(counts.key == counter.key)
    }

    @Test func projectionRecorderIgnoresWritesElsewhereAndEqualWrites() {
        let app = MonitoredState(RecorderAppModel(), key: uniqueKey())
        let names = app.user.name.record()
        app.user.age ~> 31
        app.theme ~> "dark"
        app.user.name ~> "Ann"
        app.user.name ~> "Tim"
        #expect(names.values == ["Ann", "Tim"])
        #expect(names.key == app.key + ".user.name")
    }

    @Test func nextHandsOutEachValueOnceInOrder() async throws {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        counter ~> 1
        counter ~> 2
        #expect(try await counts.next() == [0])
        #expect(try await counts.next(2) == [1, 2])
        counter ~> 3
        #expect(try await counts.next() == [3])
        #expect(counts.values == [0, 1, 2, 3])
    }

    @Test func nextWaitsForValuesWrittenOnAnotherThread() async throws {
        let app = MonitoredState(RecorderAppModel(), key: uniqueKey())
        let names = app.user.name.record()
        let writer = Thread {
            for name in ["Tim", "Eve", "Bob"] { app.user.name ~> name }
        }
        writer.start()
        #expect(try await names.next(4, timeout: .seconds(30)) == ["Ann", "Tim", "Eve", "Bob"])
    }

    @Test func nextTimesOutWithAnErrorNamingTheKeyAndWhatWasSeen() async throws {
        let app = MonitoredState(RecorderAppModel(), key: uniqueKey("app"))
        let names = app.user.name.record()
        app.user.name ~> "Tim"
        _ = try await names.next()
        do {
            _ = try await names.next(2, timeout: .milliseconds(20))
            Issue.record("next(2) returned with only one new value recorded")
        } catch let error as RecordingTimeoutError {
            #expect(error.key == app.key + ".user.name")
            #expect(error.expectedCount == 2)
            #expect(error.received == ["\"Tim\""])
            #expect(error.recorded == ["\"Ann\"", "\"Tim\""])
            #expect(error.description.contains("'\(app.key).user.name'"))
            #expect(error.description.contains("2 new values"))
            #expect(error.description.contains("[\"Tim\"]"))
        }
        app.user.name ~> "Eve"
        #expect(try await names.next(2) == ["Tim", "Eve"])
    }

    @Test func waitersAreServedInTheOrderTheyAsked() async throws {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        _ = try await counts.next()
        async let first = counts.next(2, timeout: .seconds(30))
        async let second = counts.next(1, timeout: .seconds(30))
        let writer = Thread {
            for value in 1...3 { counter ~> value }
        }
        writer.start()
        let (a, b) = try await (first, second)
        #expect(a.count == 2)
        #expect(b.count == 1)
        #expect((a + b).sorted() == [1, 2, 3])
    }

    @Test func cancellingTheWaitingTaskThrowsCancellationError() async {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        let waiting = Task { try await counts.next(5, timeout: .seconds(600)) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test func recordChangesRecordsOldAndNewValuesFromTheNextChange() {
        let counter = MonitoredState(5, key: uniqueKey())
        let changes = counter.recordChanges()
        counter ~> 6
        counter ~> 8
        #expect(changes.values.map(\.oldValue) == [5, 6])
        #expect(changes.values.map(\.newValue) == [6, 8])
        #expect(changes.values.map(\.version) == [1, 2])
    }

    @Test func projectionRecordChangesSeesOnlyItsPart() {
        let app = MonitoredState(RecorderAppModel(), key: uniqueKey())
        let ages = app.user.age.recordChanges()
        app.theme ~> "dark"
        app.user.age ~> 31
        #expect(ages.values.map(\.newValue) == [31])
        #expect(ages.values.map(\.oldValue) == [30])
    }

    @Test func cancelStopsRecordingAndKeepsWhatWasRecorded() {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        counter ~> 1
        counts.cancel()
        counter ~> 2
        #expect(counts.values == [0, 1])
    }

    @Test func releasedRecorderNoLongerKeepsTheContainerAlive() {
        weak var released: MonitoredState<Int>?
        var recorder: StateRecorder<Int>?
        do {
            let counter = MonitoredState(0, key: uniqueKey())
            released = counter
            recorder = counter.record()
            counter ~> 1
        }
        #expect(released == nil)
        #expect(recorder?.values == [0, 1])
        recorder = nil
    }

    @Test func concurrentWritersAreRecordedCompletelyAndInVersionOrder() async throws {
        let counter = MonitoredState(0, key: uniqueKey())
        let counts = counter.record()
        let threads = 4
        let writesPerThread = 2_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<writesPerThread { counter.modify { $0 += 1 } }
        }
        let all = try await counts.next(threads * writesPerThread + 1, timeout: .seconds(60))
        #expect(all == Array(0...(threads * writesPerThread)))
    }
}
