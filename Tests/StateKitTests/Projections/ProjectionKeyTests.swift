import StateKit
import Testing

private struct Line: Equatable, Sendable {
    var title = "Book"
    var quantity = 2
    var isEmpty: Bool { quantity == 0 }
}

private struct Basket: Equatable, Sendable {
    var lines = [Line()]
    var total: Int { lines.map(\.quantity).reduce(0, +) }
}

@Suite struct ProjectionKeyTests {
    @Test func storedPathKeyNamesTheProperties() {
        let basket = MonitoredState(Basket(), key: "basket")
        #expect(basket.lines.key == "basket.lines")
    }

    @Test func computedPathKeyNamesTheTypeWithoutAnAddress() {
        let basket = MonitoredState(Basket(), key: "basket")
        #expect(basket.total.key == "basket.<computed Int>")
        #expect(basket.lines.count.key == "basket.lines.<computed Int>")
        #expect(basket.observe(\.lines[0].isEmpty).key == "basket.lines.<computed Line>.<computed Bool>")
    }
}
