//: # The app's state, in one place
//:
//: The article keeps its containers as statics of one `struct`, so every input of the app is
//: visible at a glance. Swift 6 wants each static to be `Sendable`: containers are when their
//: values are. A container of a non-`Sendable` class (the article's `CEO`) belongs to an actor.
import StateKit

final class CEO {
    var name: String

    init(name: String) {
        self.name = name
    }
}

struct AppState {
    static let themeColor = State("blue", key: "themeColor")
    static let appRating = State<Int?>(nil, key: "appRating")
    static let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")
    @MainActor static let currentCEO = State(CEO(name: "Tim Cook"), key: "currentCEO")
}

AppState.appRating ~> 5
print(AppState.appRating.value ?? 0)  // 5

let locations = AppState.deviceLocation.subscribe { print("location: \($0 ?? "unknown")") }
AppState.deviceLocation ~> "Atlanta"

print(AppState.currentCEO.value.name)  // Tim Cook (top-level code runs on the main actor)
