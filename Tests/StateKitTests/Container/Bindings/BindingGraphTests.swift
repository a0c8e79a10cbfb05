import Testing

@testable import StateKit

/// Which bindings ``BindingGraph`` counts as on a loop: those whose target leads back to their
/// source through bindings, as bindings are made and released.
struct BindingGraphTests {
    /// Container ids of their own, far from those of real clocks, which count up from 1.
    private static func nodes(_ count: Int) -> [UInt64] {
        let first = UInt64.random(in: (1 << 62)...(1 << 63))
        return (0..<UInt64(count)).map { first + $0 }
    }

    private static func isInLoop(_ edge: BindingGraph.Edge) -> Bool {
        edge.isInLoop.load(ordering: .relaxed)
    }

    @Test func aOneWayBindingAndAChainAreNotLoops() {
        let n = Self.nodes(3)
        let first = BindingGraph.shared.add(from: n[0], to: n[1])
        let second = BindingGraph.shared.add(from: n[1], to: n[2])
        let parallel = BindingGraph.shared.add(from: n[0], to: n[2])
        #expect(![first, second, parallel].contains(where: Self.isInLoop))
    }

    @Test func bothBindingsOfATwoWayBindingAreOnALoop() {
        let n = Self.nodes(2)
        let there = BindingGraph.shared.add(from: n[0], to: n[1])
        #expect(!Self.isInLoop(there))
        let back = BindingGraph.shared.add(from: n[1], to: n[0])
        #expect(Self.isInLoop(there) && Self.isInLoop(back))
    }

    @Test func aBindingOfAContainerToItselfIsALoop() {
        let n = Self.nodes(1)
        #expect(Self.isInLoop(BindingGraph.shared.add(from: n[0], to: n[0])))
    }

    /// `y <~ x`, `z <~ y`, `x <~ z`, and `d <~ x` beside them: the cycle is a loop, the binding
    /// out of it is not; releasing one binding of the cycle opens the loop for the others.
    @Test func aCycleIsALoopUntilOneOfItsBindingsIsReleased() {
        let n = Self.nodes(4)
        var cycle: [BindingGraph.Edge] = [
            BindingGraph.shared.add(from: n[0], to: n[1]),
            BindingGraph.shared.add(from: n[1], to: n[2]),
        ]
        let out = BindingGraph.shared.add(from: n[0], to: n[3])
        #expect(!cycle.contains(where: Self.isInLoop))
        cycle.append(BindingGraph.shared.add(from: n[2], to: n[0]))
        #expect(cycle.allSatisfy(Self.isInLoop))
        #expect(!Self.isInLoop(out))
        cycle.remove(at: 1)
        #expect(!cycle.contains(where: Self.isInLoop))
        #expect(!Self.isInLoop(out))
    }

    /// Two loops through one container: releasing a binding of one leaves the other a loop.
    @Test func releasingABindingOfOneLoopLeavesAnotherThroughTheSameContainer() {
        let n = Self.nodes(3)
        var first = [BindingGraph.shared.add(from: n[0], to: n[1]), BindingGraph.shared.add(from: n[1], to: n[0])]
        let second = [BindingGraph.shared.add(from: n[0], to: n[2]), BindingGraph.shared.add(from: n[2], to: n[0])]
        #expect((first + second).allSatisfy(Self.isInLoop))
        first.removeLast()
        #expect(!Self.isInLoop(first[0]))
        #expect(second.allSatisfy(Self.isInLoop))
    }
}
