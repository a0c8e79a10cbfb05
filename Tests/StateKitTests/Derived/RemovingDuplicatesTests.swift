import StateKit
import StateKitTesting
import Testing

@Suite struct RemovingDuplicatesTests {
    struct Cart: Equatable, Sendable {
        var items: [String] = []
        var coupon = ""
    }

    /// Not `Equatable`: only a custom equality can tell its values apart.
    struct Reading: Sendable {
        var celsius: Double
        var sensor: String
    }

    @Test func projectionIsToldOnlyWhenTheCustomEqualitySaysItDiffers() {
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let sizes = cart.items.removingDuplicates { $0.count == $1.count }
        let values = sizes.record()
        cart.items ~> ["a"]
        cart.items ~> ["b"]
        cart.items ~> ["b", "c"]
        #expect(values.values == [[], ["a"], ["b", "c"]])
        #expect(sizes.key == cart.key + ".items.removingDuplicates")
    }

    @Test func heldValueStaysTheFirstOfARunOfDuplicates() {
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let sizes = cart.items.removingDuplicates { $0.count == $1.count }
        cart.items ~> ["a"]
        #expect(sizes.value == ["a"])
        cart.items ~> ["b"]
        #expect(sizes.value == ["a"])
    }

    @Test func containerOfANonEquatableValueGetsACustomEquality() {
        let reading = MonitoredState(Reading(celsius: 20, sensor: "hall"), key: uniqueKey("reading"))
        let rounded = reading.removingDuplicates { $0.celsius.rounded() == $1.celsius.rounded() }
        let values = rounded.record()
        reading ~> Reading(celsius: 20.2, sensor: "hall")
        reading ~> Reading(celsius: 21.1, sensor: "hall")
        reading ~> Reading(celsius: 20.9, sensor: "porch")
        #expect(values.values.map(\.celsius) == [20, 21.1])
    }

    @Test func derivedStateWithACustomEqualityIsADerivedState() {
        let total = MonitoredState(3, key: uniqueKey("total"))
        let tens: DerivedState<Int> = total.map { $0 }.removingDuplicates { $0 / 10 == $1 / 10 }
        let values = tens.record()
        for next in [5, 9, 12, 17, 31] { total ~> next }
        #expect(values.values == [3, 12, 31])
        #expect(tens.version == 2)
    }

    @Test func projectionsOfADeduplicatedValueComposeAndMap() {
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let byCoupon = cart.readOnly.removingDuplicates { $0.coupon == $1.coupon }
        let coupon = byCoupon.coupon.record()
        let itemCount = byCoupon.map { $0.items.count }
        cart.items ~> ["a"]
        cart.coupon ~> "SPRING"
        #expect(coupon.values == ["", "SPRING"])
        #expect(itemCount.value == 1)
    }
}
