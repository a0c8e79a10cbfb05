//: # Transactions, derived state and undo
//:
//: An app model with more than one container needs three things: change several as one step,
//: derive a value from several that is never seen half-updated, and undo.
import Foundation
import StateKit

struct Item: Equatable, Sendable {
    var name: String
    var price: Int
}

let items = MonitoredState([Item(name: "Book", price: 12)], key: "items")
let discount = MonitoredState(0, key: "discount")

//: A derived state computes from several sources, here a projection and a container.
let total = DerivedState(key: "total", items, discount) { items, discount in
    items.map(\.price).reduce(0, +) - discount
}
let subscription = total.subscribe { print("total: \($0)") }  // total: 12

//: A transaction is one change of each container, and one computation of what derives from them.
withStateTransaction {
    items ~> { $0.append(Item(name: "Pen", price: 3)) }
    discount ~> 5
}  // total: 10, printed once

//: A diamond: `d` reads `b` and `c`, both derived from `a`. It never sees a new `b` with an old `c`.
let a = MonitoredState(1, key: "a")
let b = a.map { $0 * 2 }
let c = a.map { $0 * 3 }
let d = DerivedState(b, c) { $0 + $1 }
let sums = d.subscribe { print("d: \($0)") }  // d: 5
a ~> 2  // d: 10, never 7 or 8

//: A custom equality: told only when the number of items changes.
let counted = items.removingDuplicates { $0.count == $1.count }
let counts = counted.subscribe { print("items: \($0.count)") }  // items: 2
items ~> { $0[0].price = 20 }  // total: 18; the count is the same: "items" is not printed

//: Undo and redo whole steps across containers.
let history = StateHistory(tracking: items, discount, limit: 100)
withStateTransaction {
    items ~> { $0.removeAll() }
    discount ~> 0
}  // total: 0, items: 0
history.undo()  // total: 18, items: 2; both containers back as one step
print("can undo: \(history.canUndo), can redo: \(history.canRedo)")
history.redo()  // total: 0

//: `<~` binds a container to any AsyncSequence, such as a stream of server events.
let (feed, continuation) = AsyncStream.makeStream(of: Int.self)
let bound = discount <~ feed
continuation.yield(7)  // total: -7
continuation.finish()
while bound.isActive { usleep(1_000) }
print("discount from the feed: \(discount.value)")
