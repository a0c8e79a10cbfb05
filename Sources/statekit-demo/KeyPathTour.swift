import StateKit

struct Profile: Equatable, Sendable {
    var name: String
    var visits = 0
}

struct Shop: Equatable, Sendable {
    var profile = Profile(name: "Ann")
    var cart: [String] = []
    var isCheckoutEnabled: Bool { !cart.isEmpty }
}

let keyPathSection = TourSection(name: "keypaths", summary: "subscribe to one part of a larger state") {
    let shop = MonitoredState(Shop(), key: "shop")
    var subscriptions = Set<Subscription>()
    shop.profile.name.subscribe { print("  name subscriber: \($0)") }.store(in: &subscriptions)
    shop.isCheckoutEnabled.subscribe { print("  checkout button enabled: \($0)") }.store(in: &subscriptions)

    print("add to cart (name subscriber stays quiet)")
    shop.cart ~> { $0.append("apples") }
    print("write an equal name (nobody is told)")
    shop.profile.name ~> "Ann"
    print("rename through the projection: one change of the whole shop")
    shop.profile.name ~> "Tim"
    print("shop version is now \(shop.version)")
    subscriptions.removeAll()
}
