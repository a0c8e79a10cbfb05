import Foundation
import StateKit
import StateKitTesting
import Testing

@Suite struct RecordingListenerTests {
    @Test func recordsTheKeyOfEveryCallInOrder() async {
        let first = MonitoredState(0, key: uniqueKey("first"))
        let second = MonitoredState("", key: uniqueKey("second"))
        let listener = RecordingListener()
        first.attach(listener: listener)
        second.attach(listener: listener)
        first ~> 1
        second ~> "a"
        first ~> 2
        await listener.stateListenerQueue.flush()
        #expect(listener.keys == [first.key, second.key, first.key])
        #expect(listener.callCount == 3)
    }

    @Test func equalAssignmentCallsNothing() async {
        let state = MonitoredState(1, key: uniqueKey())
        let listener = RecordingListener()
        state.attach(listener: listener)
        state ~> 1
        await listener.stateListenerQueue.flush()
        #expect(listener.keys.isEmpty)
    }

    @Test func nextWaitsForCallsFromAnotherThread() async throws {
        let state = MonitoredState(0, key: uniqueKey())
        let listener = RecordingListener()
        state.attach(listener: listener)
        Task.detached {
            for value in 1...3 { state ~> value }
        }
        #expect(try await listener.next(3) == [state.key, state.key, state.key])
    }

    @Test func nextTimesOutNamingWhatArrived() async {
        let state = MonitoredState(0, key: uniqueKey())
        let listener = RecordingListener()
        state.attach(listener: listener)
        state ~> 1
        do {
            _ = try await listener.next(2, timeout: .milliseconds(50))
            Issue.record("expected a timeout")
        } catch let error as RecordingTimeoutError {
            #expect(error.key == state.key)
            #expect(error.received == [state.key])
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
