import StateKit

/// Transactions, derived state, undo and binding a stream, on a small shopping cart.
let derivedSection = TourSection(
    name: "derived",
    summary: "transactions, glitch-free derived state, undo and redo, <~ from a stream"
) {
    let prices = MonitoredState([12, 3], key: "cart.prices")
    let discount = MonitoredState(0, key: "cart.discount")

    print("-- a derived state of two containers; a transaction is one computation")
    let total = DerivedState(key: "cart.total", prices, discount) { prices, discount in
        prices.reduce(0, +) - discount
    }
    let totals = total.subscribe { print("   total \($0) (version \(total.version))") }
    withStateTransaction {
        prices ~> { $0.append(5) }
        discount ~> 4
    }

    print("-- a diamond never mixes old and new inputs (a combineLatest would print 7 first)")
    let a = MonitoredState(1, key: "a")
    let doubled = a.map { $0 * 2 }
    let tripled = a.map { $0 * 3 }
    let sum = DerivedState(doubled, tripled) { $0 + $1 }
    let sums = sum.subscribe { print("   2a + 3a = \($0)") }
    a ~> 2

    print("-- undo and redo whole steps across containers")
    let history = StateHistory(tracking: prices, discount)
    withStateTransaction {
        prices ~> []
        discount ~> 0
    }
    history.undo()
    print("   after undo: prices \(prices.value), discount \(discount.value), can redo: \(history.canRedo)")
    history.redo()

    print("-- <~ binds a container to an AsyncSequence")
    let (feed, continuation) = AsyncStream.makeStream(of: Int.self)
    let binding = discount <~ feed
    continuation.yield(2)
    continuation.finish()
    while binding.isActive { await Task.yield() }
    withExtendedLifetime((totals, sums)) {}
}
