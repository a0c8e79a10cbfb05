import Foundation
import StateKit
import StateKitTesting
import Testing

/// A projection whose value is optional offers its wrapped type's members as optional projections.
@Suite struct OptionalProjectionTests {
    struct Owner: Equatable, Sendable {
        var name: String
    }

    struct Habit: Identifiable, Equatable, Sendable {
        var id: String
        var streak = 0
        var note: String? = nil
        var owner = Owner(name: "me")
    }

    struct Tracker: Equatable, Sendable {
        var habits = [Habit(id: "water"), Habit(id: "walk")]
    }

    @Test func aMemberOfAnOptionalElementIsAnOptionalProjection() {
        let tracker = MonitoredState(Tracker(), key: uniqueKey())
        let streak: MutableObserved<Int?> = tracker.habits[id: "water"].streak
        let name: MutableObserved<String?> = tracker.habits[id: "water"].owner.name
        let note: MutableObserved<String?> = tracker.habits[id: "water"].note
        let missing: MutableObserved<Int?> = tracker.habits[id: "read"].streak
        #expect(streak.value == 0)
        #expect(name.value == "me")
        #expect(note.value == nil)
        #expect(missing.value == nil)
        let readOnly: Observed<Int?> = tracker.readOnly.habits[id: "water"].streak
        #expect(readOnly.value == 0)
    }

    @Test func itFiresOnlyWhenItsOwnPartChanges() {
        let tracker = MonitoredState(Tracker(), key: uniqueKey())
        let streak = tracker.habits[id: "water"].streak
        let recorder = streak.record()
        tracker.modify { $0.habits[1].streak = 9 }
        tracker.modify { $0.habits[0].note = "before breakfast" }
        tracker.modify { $0.habits[0].streak = 1 }
        tracker.modify { $0.habits.removeAll { $0.id == "water" } }
        tracker.modify { $0.habits.append(Habit(id: "water", streak: 4)) }
        #expect(recorder.values == [0, 1, nil, 4])
        recorder.cancel()
    }

    @Test func writingThroughItIsOneChangeOfTheContainer() {
        let tracker = MonitoredState(Tracker(), key: uniqueKey())
        let streak = tracker.habits[id: "water"].streak
        let note = tracker.habits[id: "water"].note
        streak ~> 3
        note ~> "morning"
        #expect(tracker.value.habits[0] == Habit(id: "water", streak: 3, note: "morning"))
        #expect(tracker.version == 2)
        note ~> nil
        #expect(tracker.value.habits[0].note == nil)
        streak ~> nil
        #expect(tracker.value.habits[0].streak == 3)
    }

    @Test func writingWhileTheElementIsAbsentLeavesTheValueAsItIs() {
        let tracker = MonitoredState(Tracker(), key: uniqueKey())
        let streak = tracker.habits[id: "read"].streak
        streak ~> 5
        streak.modify { $0 = 6 }
        #expect(tracker.value == Tracker())
        #expect(streak.value == nil)
    }

    @Test func aContainerOfAnOptionalValueProjectsItsMembers() {
        let owner = MonitoredState<Owner?>(nil, key: uniqueKey())
        let name: MutableObserved<String?> = owner.name
        #expect(name.value == nil)
        owner ~> Owner(name: "Ada")
        #expect(name.value == "Ada")
        name ~> "Grace"
        #expect(owner.value == Owner(name: "Grace"))
    }

    @Test func concurrentIncrementsThroughTheProjectionLoseNothing() async {
        let tracker = MonitoredState(Tracker(), key: uniqueKey())
        let streak = tracker.habits[id: "water"].streak
        let recorder = streak.record()
        await onThreads(4) { thread in
            for _ in 0..<500 {
                if thread == 0 {
                    tracker.modify { $0.habits[1].streak += 1 }
                } else {
                    streak.modify { $0? += 1 }
                }
            }
        }
        #expect(tracker.value.habits[0].streak == 1_500)
        #expect(tracker.value.habits[1].streak == 500)
        await eventually("the last streak delivered") { recorder.latest == 1_500 }
        let seen = recorder.values.compactMap { $0 }
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
        recorder.cancel()
    }
}
