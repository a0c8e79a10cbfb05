import Dispatch
import Observation
import Testing

@testable import StateKit

@Suite struct MonitoredStateObservationTests {
    @Test func readingValueInTrackingFiresOnChangeOnceOnNextWrite() {
        let state = MonitoredState(0, key: uniqueKey())
        let probe = TrackingProbe<Int>()
        probe.trackOnce { state.value }
        state.modify(1)
        state.modify(2)
        #expect(probe.firings.count == 1)
    }

    @Test func onChangeRunsBeforeTheWriteLandsAndSubscribersAfter() {
        let state = MonitoredState(0, key: uniqueKey())
        let probe = TrackingProbe<Int>()
        let seenBySubscriber = Collector<Int>()
        let subscription = state.subscribe { seenBySubscriber.append($0) }
        probe.trackOnce { state.value }
        state.modify(7)
        #expect(probe.firings == [0])
        #expect(seenBySubscriber.all == [0, 7])
        subscription.cancel()
    }

    @Test func continuousTrackingFiresOncePerChange() {
        let state = MonitoredState(0, key: uniqueKey())
        let probe = TrackingProbe<Int>()
        probe.trackContinuously { state.value }
        for value in 1...5 { state.modify(value) }
        #expect(probe.firings == [0, 1, 2, 3, 4])
    }

    @Test func equalAssignmentDoesNotFireOnChange() {
        let state = MonitoredState(3, key: uniqueKey())
        let probe = TrackingProbe<Int>()
        probe.trackOnce { state.value }
        state.modify(3)
        state ~> 3
        #expect(probe.firings.isEmpty)
        state.modify(4)
        #expect(probe.firings == [3])
    }

    @Test func everyKindOfWriteFiresOnChange() throws {
        struct Profile: Equatable, Sendable { var name = "" }
        let state = MonitoredState(Profile(), key: uniqueKey())
        let source = MonitoredState(Profile(name: "source"), key: uniqueKey())
        let writes: [(String, () throws -> Void)] = [
            ("modify(_:)", { state.modify(Profile(name: "a")) }),
            ("modify { }", { state.modify { $0.name = "b" } }),
            ("set", { try state.set(Profile(name: "c")) }),
            ("update", { try state.update { $0.name = "d" } }),
            ("~> value", { state ~> Profile(name: "e") }),
            ("~> closure", { state ~> { $0.name = "f" } }),
            ("projection ~>", { state.name ~> "g" }),
            ("didModify()", { state.didModify() }),
            ("<~", { withExtendedLifetime(state <~ source) {} }),
        ]
        for (name, write) in writes {
            let probe = TrackingProbe<Profile>()
            probe.trackOnce { state.value }
            try write()
            #expect(probe.firings.count == 1, "\(name)")
        }
    }

    @Test func writesFromAnotherThreadFireOnChangeThere() {
        let state = MonitoredState(0, key: uniqueKey())
        let probe = TrackingProbe<Int>()
        probe.trackContinuously { state.value }
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            for _ in 0..<200 { state.modify { $0 += 1 } }
        }
        done.wait()
        #expect(state.value == 200)
        #expect(probe.firings == Array(0..<200))
    }

    @Test func onChangeMayReadItAndWriteOtherContainersWithoutDeadlock() {
        let state = MonitoredState(0, key: uniqueKey())
        let mirror = MonitoredState(-1, key: uniqueKey())
        withObservationTracking {
            _ = state.value
        } onChange: {
            mirror.modify(state.value)
        }
        state.modify(1)
        #expect(mirror.value == 0)
    }

    @Test func plainStateReadsStayUntracked() {
        let state = State(0, key: uniqueKey())
        _ = state.value
        #expect(state.observation.current == nil)
    }

    @Test func aContainerGetsItsRegistrarOnItsFirstRead() {
        let state = MonitoredState(0, key: uniqueKey())
        state.modify(1)
        #expect(state.observation.current == nil)
        let probe = TrackingProbe<Int>()
        probe.trackOnce { state.value }
        #expect(state.observation.current != nil)
        state.modify(2)
        #expect(probe.firings == [1])
    }
}
