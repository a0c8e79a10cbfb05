//: # State: a container for one piece of state
//:
//: The seed article ("Lightweight State Containers in Swift") wraps a value, names it with a key,
//: and routes every change through `modify`. StateKit keeps that API and fixes its races.
import StateKit

//: A value type. (The article uses `UIColor`; a plain enum keeps this page portable.)
enum ThemeColor: String, Sendable {
    case blue, orange
}

let themeColor = State(ThemeColor.blue, key: "themeColor")
print(themeColor.value)  // blue

//: An `Optional`, changed with `modify(_:)` and the seed's `~>` operator.
let appRating = State<Int?>(nil, key: "appRating")
print(String(describing: appRating.value))  // nil

appRating.modify(4)
print(String(describing: appRating.value))  // Optional(4)

appRating ~> nil
print(String(describing: appRating.value))  // nil

//: Unlike the article's barrier-async write, a read right after a write sees it, and every
//: change counts one `version`. Assigning an equal value is not a change.
print(appRating.version)  // 2
appRating ~> nil
print(appRating.version)  // still 2

//: Derive a value from the current one with the closure form: it is atomic, so concurrent
//: `modify { $0 += 1 }` calls lose nothing. `~>` with a closure is the same thing.
let launches = State(0, key: "launches")
launches.modify { $0 += 1 }
launches ~> { $0 += 1 }
print(launches.value)  // 2

//: `~>` keeps the standard library's precedence, so put a compound right-hand side in parentheses.
launches ~> (launches.value * 10)
print(launches.value)  // 20
