import Dispatch
import StateKit

/// The seed article's examples, written against StateKit.
enum SeedArticle {
    /// The article's color, without UIKit.
    enum Color: String, Sendable {
        case blue, red
    }

    /// The article's reference-type value: changing `name` in place is invisible to the container.
    final class CEO: CustomDebugStringConvertible {
        var name: String

        init(name: String) {
            self.name = name
        }

        var debugDescription: String { name }
    }

    /// The article's `State` subclass hook: `didModify()` runs after every change.
    final class LoggingState<Value>: State<Value>, @unchecked Sendable {
        let log: @Sendable (String) -> Void

        init(_ defaultValue: Value, key: String, log: @escaping @Sendable (String) -> Void) {
            self.log = log
            super.init(defaultValue, key: key)
        }

        override func didModify() {
            log("State for key \(key) modified (version \(version)).")
            super.didModify()
        }
    }

    /// The article's `LocationViewController`, minus the map. In a command-line tool the main queue
    /// never runs, so it brings its own `stateListenerQueue` (the default is `.main`).
    final class LocationViewController: StateListener, @unchecked Sendable {
        let stateListenerQueue = DispatchQueue(label: "demo.location-view-controller")
        let deviceLocation: MonitoredState<String?>

        init(deviceLocation: MonitoredState<String?>) {
            self.deviceLocation = deviceLocation
        }

        func stateModified<T>(_ state: State<T>) {
            if state === deviceLocation {
                print("   listener: location changed, centering the map on \(deviceLocation.value ?? "nowhere")")
            }
        }
    }

    /// The article's app-level struct of statics; Swift 6 wants each static `Sendable`, so a
    /// container of a non-`Sendable` class is isolated to the main actor.
    struct AppState {
        static let themeColor = State(Color.blue, key: "themeColor")
        static let appRating = State<Int?>(nil, key: "appRating")
        static let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")
        @MainActor static let currentCEO = State(CEO(name: "Tim Cook"), key: "currentCEO")
    }
}

let seedArticleSection = TourSection(name: "seed", summary: "the seed article's containers, fixed") {
    print("-- State wrapping a value type")
    let themeColor = State(SeedArticle.Color.blue, key: "themeColor")
    print("   themeColor.value = \(themeColor.value)")

    print("-- State wrapping an Optional, changed with modify and ~>")
    let appRating = State<Int?>(nil, key: "appRating")
    print("   appRating.value = \(String(describing: appRating.value))")
    appRating.modify(4)
    print("   after modify(4): \(String(describing: appRating.value)), version \(appRating.version)")
    appRating ~> nil
    print("   after ~> nil:     \(String(describing: appRating.value)), version \(appRating.version)")
    appRating ~> nil
    print("   ~> nil again is no change: version still \(appRating.version)")

    print("-- a reference type: in-place changes need didModify()")
    let currentCEO = MonitoredState(SeedArticle.CEO(name: "John Sculley"), key: "currentCEO")
    let announcements = currentCEO.subscribe { print("   subscriber sees \($0.name)") }
    currentCEO ~> SeedArticle.CEO(name: "Steve Jobs")
    currentCEO.value.name = "Tim Cook"
    print("   changed the name in place: version still \(currentCEO.version), nobody told")
    currentCEO.didModify()
    print("   after didModify(): version \(currentCEO.version)")
    announcements.cancel()

    print("-- a subclass overriding didModify(), the article's extension point")
    let rating = SeedArticle.LoggingState(0, key: "loggedRating") { print("   \($0)") }
    rating ~> 5
    rating.modify { $0 += 1 }

    print("-- a StateListener, held weakly, told on its own queue")
    let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")
    var viewController: SeedArticle.LocationViewController? = .init(deviceLocation: deviceLocation)
    deviceLocation.attach(listener: viewController!)
    deviceLocation ~> "33.7490° N, 84.3880° W"
    viewController?.stateListenerQueue.sync {}
    viewController = nil
    deviceLocation ~> "37.3349° N, 122.0090° W"
    print("   after the view controller is gone: \(deviceLocation.allListeners.count) listeners, nothing to detach")

    print("-- the AppState struct of statics")
    AppState.appRating ~> 5
    print("   AppState.appRating = \(String(describing: AppState.appRating.value))")
    let ceo = await MainActor.run { AppState.currentCEO.value.name }
    print("   AppState.currentCEO = \(ceo) (a main-actor static: CEO is not Sendable)")
}

private typealias AppState = SeedArticle.AppState
