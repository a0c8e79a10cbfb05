import Foundation
import StateKit

/// The seed article's reference type: mutable in place, so changes must be announced.
final class CEO: CustomDebugStringConvertible {
    var name: String
    init(name: String) { self.name = name }
    var debugDescription: String { name }
}

/// The article's location view controller, as a listener with a queue of its own.
final class LocationScreen: StateListener, @unchecked Sendable {
    let stateListenerQueue = DispatchQueue(label: "location-screen")
    let updated = DispatchSemaphore(value: 0)

    func stateModified<T>(_ state: State<T>) {
        print("  listener: \(state.key) changed, updating the map to \(state.value)")
        updated.signal()
    }
}

let seedArticleSection = TourSection(name: "seed", summary: "the seed article's containers, races fixed") {
    let themeColor = State("blue", key: "themeColor")
    print("themeColor.value = \(themeColor.value)")

    let appRating = State<Int?>(nil, key: "appRating")
    appRating.modify(4)
    print("appRating after modify(4) = \(String(describing: appRating.value))")
    appRating ~> nil
    print("appRating after ~> nil = \(String(describing: appRating.value)), version \(appRating.version)")

    let currentCEO = MonitoredState(CEO(name: "John Sculley"), key: "currentCEO")
    let names = currentCEO.subscribe { print("  subscriber: CEO is \($0.name)") }
    currentCEO ~> CEO(name: "Steve Jobs")
    currentCEO.value.name = "Tim Cook"
    currentCEO.didModify()
    names.cancel()

    let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")
    let screen = LocationScreen()
    deviceLocation.attach(listener: screen)
    deviceLocation ~> "51.5072° N, 0.1276° W"
    _ = screen.updated.wait(timeout: .now() + 5)

    let counter = MonitoredState(0, key: "counter")
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
        for _ in 0..<10_000 { counter.modify { $0 += 1 } }
    }
    print("8 threads x 10,000 modify { $0 += 1 } = \(counter.value) (the seed's modify(value + 1) loses updates)")
}
