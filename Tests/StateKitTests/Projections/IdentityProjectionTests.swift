import Foundation
import StateKit
import StateKitTesting
import Testing

/// `[id:]` projections follow an element of a collection, wherever it moves, and never trap.
@Suite struct IdentityProjectionTests {
    struct Item: Identifiable, Equatable, Sendable {
        var id: Int
        var title: String
        var quantity = 1
    }

    struct Cart: Equatable, Sendable {
        var items: [Item] = (1...3).map { Item(id: $0, title: "item \($0)") }
    }

    @Test func projectionFollowsItsElementWhenItMoves() {
        let cart = MonitoredState(Cart(), key: uniqueKey())
        let second = cart.items[id: 2]
        let recorder = second.record()
        cart.modify { $0.items.reverse() }
        cart.modify { $0.items.insert(Item(id: 9, title: "new"), at: 0) }
        #expect(second.value == Item(id: 2, title: "item 2"))
        #expect(recorder.values == [Item(id: 2, title: "item 2")])
        let readOnly: Observed<Item?> = cart.readOnly.items[id: 2]
        #expect(readOnly.value?.title == "item 2")
        recorder.cancel()
    }

    @Test func removingTheElementNotifiesNilOnceAndNeverTraps() {
        let cart = MonitoredState(Cart(), key: uniqueKey())
        let second = cart.items[id: 2]
        let recorder = second.record()
        cart.modify { $0.items.removeAll { $0.id == 2 } }
        cart.modify { $0.items[0].quantity = 5 }
        cart.modify { $0.items.removeAll() }
        #expect(second.value == nil)
        #expect(recorder.values == [Item(id: 2, title: "item 2"), nil])
        recorder.cancel()
    }

    @Test func writingReplacesTheElementInPlaceAsOneChange() {
        let cart = MonitoredState(Cart(), key: uniqueKey())
        let second = cart.items[id: 2]
        second.modify { $0?.quantity += 1 }
        second ~> Item(id: 2, title: "renamed", quantity: 7)
        #expect(cart.value.items.map(\.id) == [1, 2, 3])
        #expect(cart.value.items[1] == Item(id: 2, title: "renamed", quantity: 7))
        #expect(cart.version == 2)
    }

    @Test func writingNilRemovesTheElementAndWritingItAgainAppendsIt() {
        let cart = MonitoredState(Cart(), key: uniqueKey())
        let second = cart.items[id: 2]
        second ~> nil
        #expect(cart.value.items.map(\.id) == [1, 3])
        second ~> Item(id: 2, title: "back")
        #expect(cart.value.items.map(\.id) == [1, 3, 2])
        let direct = MonitoredState([Item(id: 1, title: "one")], key: uniqueKey())
        direct[id: 1] ~> nil
        #expect(direct.value.isEmpty)
    }

    @Test func thousandRowsEachHearOnlyTheirOwnElement() {
        let rows = MonitoredState((0..<1_000).map { Item(id: $0, title: "row \($0)") }, key: uniqueKey())
        let recorders = (0..<1_000).map { rows[id: $0].record() }
        rows.modify { $0.shuffle() }
        rows[id: 500].modify { $0?.title = "edited" }
        rows.modify { $0.removeAll { $0.id == 999 } }
        for (id, recorder) in recorders.enumerated() {
            switch id {
            case 500: #expect(recorder.values.map { $0?.title } == ["row 500", "edited"])
            case 999: #expect(recorder.values.map { $0?.title } == ["row 999", nil])
            default: #expect(recorder.values.count == 1, "row \(id) heard a change of another row")
            }
        }
        recorders.forEach { $0.cancel() }
    }

    @Test(.contendingTimeLimit) func deletingRowsWhileAnotherThreadWritesThroughTheirProjectionsNeverTraps() async {
        let rows = MonitoredState((0..<200).map { Item(id: $0, title: "row \($0)") }, key: uniqueKey())
        await onThreads(2) { thread in
            for id in 0..<200 {
                if thread == 0 {
                    rows.modify { $0.removeAll { $0.id == id } }
                } else {
                    rows[id: id].modify { $0?.quantity += 1 }
                }
            }
        }
        #expect(rows.value.isEmpty)
    }
}
