import Foundation
import StateKit
import StateKitTesting
import Testing

/// Makes `count` changes of `key`, from version `first` on, each adding one to the previous value.
private func changes(_ key: String, from first: UInt64, count: Int) -> [StateChange<Int>] {
    (0..<count).map { offset in
        let version = first + UInt64(offset)
        return StateChange(
            key: key,
            oldValue: Int(version) - 1,
            newValue: Int(version),
            version: version,
            timestamp: Date()
        )
    }
}

@Suite struct RecordingSinkTests {
    @Test func keepsEveryBatchAndChangeInOrder() async throws {
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        try await sink.send(changes(key, from: 1, count: 2))
        try await sink.send(changes(key, from: 3, count: 1))
        #expect(sink.batches.map { $0.map(\.version) } == [[1, 2], [3]])
        #expect(sink.changes.map(\.version) == [1, 2, 3])
        #expect(sink.values == [1, 2, 3])
        #expect(sink.sendCount == 2)
    }

    @Test func failedSendsThrowAndRecordNothing() async throws {
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        sink.failNextSends(2)
        let batch = changes(key, from: 1, count: 1)
        await #expect(throws: RecordingSinkFailure.self) { try await sink.send(batch) }
        await #expect(throws: RecordingSinkFailure.self) { try await sink.send(batch) }
        try await sink.send(batch)
        #expect(sink.batches.count == 1)
        #expect(sink.sendCount == 3)
    }

    @Test func nextWaitsForChangesSentFromAnotherTask() async throws {
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        let sender = Task.detached {
            for version in 1...4 { try await sink.send(changes(key, from: UInt64(version), count: 1)) }
        }
        #expect(try await sink.next(4, timeout: .seconds(30)).map(\.newValue) == [1, 2, 3, 4])
        try await sender.value
    }

    @Test func nextTimesOutWithAnErrorNamingTheKeyAndWhatArrived() async throws {
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        try await sink.send(changes(key, from: 1, count: 1))
        do {
            _ = try await sink.next(3, timeout: .milliseconds(20))
            Issue.record("next(3) returned with only one change sent")
        } catch let error as RecordingTimeoutError {
            #expect(error.key == key)
            #expect(error.received == ["1"])
            #expect(error.description.contains("3 new changes of '\(key)'"))
        }
    }

    @Test func concurrentSendsAreAllKept() async throws {
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for version in 1...200 {
                group.addTask { try await sink.send(changes(key, from: UInt64(version), count: 1)) }
            }
            try await group.waitForAll()
        }
        #expect(sink.changes.map(\.version).sorted() == Array(1...200))
        #expect(sink.batches.count == 200)
    }
}
