import StateKit
import StateKitTesting
import Testing

/// The commit's own paths: how it decides a container is unchanged, delivers changes itself, lets
/// handlers start transactions, and keeps nothing once it ends.
@Suite struct TransactionCommitTests {
    struct Profile: Equatable, Sendable {
        var name: String
        var age: Int
    }

    @Test func aValueBackAtItsStartIsNotChangedWhicheverWritesTookItThere() {
        let start = Profile(name: "Ann", age: 30)
        let profile = MonitoredState(start, key: uniqueKey("profile"))
        let values = profile.record()
        // A whole value, then a body: the commit compares.
        withStateTransaction {
            profile.modify(Profile(name: "Tim", age: 30))
            profile.modify { $0.name = "Ann" }
        }
        // A part, then a whole value: the last write compared.
        withStateTransaction {
            profile.name.modify("Tim")
            profile.modify(start)
        }
        // A whole value back at the start, then a part away from it: changed.
        withStateTransaction {
            profile.modify(start)
            profile.age.modify(31)
        }
        #expect(profile.version == 1)
        #expect(values.values == [start, Profile(name: "Ann", age: 31)])
    }

    @Test func aFinishedTransactionKeepsNoValueAlive() {
        final class Payload: Sendable {}
        var first: Payload? = Payload()
        weak let original = first
        let container = State(first!, key: uniqueKey("payload"))
        first = nil
        var second: Payload? = Payload()
        weak let written = second
        withStateTransaction { container.modify(second!) }
        second = nil
        container.modify(Payload())
        #expect(original == nil)
        #expect(written == nil)
    }

    @Test func aContainerMadeAndDroppedInsideTheBodyIsReleasedAfterIt() {
        weak var dropped: MonitoredState<Int>?
        let kept = MonitoredState(0, key: uniqueKey("kept"))
        withStateTransaction {
            let temporary = MonitoredState(1, key: uniqueKey("temporary"))
            dropped = temporary
            temporary.modify(2)
            kept.modify(temporary.value)
        }
        #expect(dropped == nil)
        #expect(kept.value == 2)
    }

    @Test func aHandlerWritingAnotherContainerOfTheTransactionIsDeliveredAfterItsChange() {
        // Run both ways round, so that either container's handlers run first.
        for handlerOnFirst in [true, false] {
            let a = MonitoredState(0, key: uniqueKey("a"))
            let b = MonitoredState(0, key: uniqueKey("b"))
            let (source, target) = handlerOnFirst ? (a, b) : (b, a)
            let subscription = source.subscribe { value in
                if value == 1 { target.modify { $0 += 100 } }
            }
            let seen = target.recordChanges()
            withStateTransaction {
                a.modify(1)
                b.modify(1)
            }
            #expect(seen.values.map(\.version) == [1, 2])
            #expect(seen.values.map(\.newValue) == [1, 101])
            subscription.cancel()
        }
    }

    @Test func aHandlerStartingATransactionWhileTheCommitDeliversGetsOneOfItsOwn() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let c = MonitoredState(0, key: uniqueKey("c"))
        let d = MonitoredState(0, key: uniqueKey("d"))
        let subscription = a.subscribe { value in
            withStateTransaction {
                c.modify(value + b.value)
                d.modify(c.value * 2)
            }
        }
        let seen = d.record()
        withStateTransaction {
            a.modify(1)
            b.modify(10)
        }
        withStateTransaction { a.modify(2) }
        #expect(seen.values == [0, 22, 24])
        #expect(c.version == 2 && d.version == 2)
        subscription.cancel()
    }
}
