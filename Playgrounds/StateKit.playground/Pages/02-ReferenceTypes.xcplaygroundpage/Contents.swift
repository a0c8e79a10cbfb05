//: # Reference types and `didModify()`
//:
//: A container cannot see a class instance change in place. The article's answer stays:
//: call `didModify()` to announce it. Value types need none of this, so prefer them.
import StateKit

final class CEO: CustomDebugStringConvertible {
    var name: String

    init(name: String) {
        self.name = name
    }

    var debugDescription: String { name }
}

let currentCEO = MonitoredState(CEO(name: "John Sculley"), key: "currentCEO")
let announcements = currentCEO.subscribe { print("told: \($0.name)") }  // told: John Sculley

//: Assigning a new instance is a change; no need for `didModify()`.
currentCEO ~> CEO(name: "Steve Jobs")  // told: Steve Jobs

//: Changing it in place is invisible until announced.
currentCEO.value.name = "Tim Cook"
print(currentCEO.version)  // 1: nobody was told
currentCEO.didModify()  // told: Tim Cook
print(currentCEO.version)  // 2

//: `didModify()` is also the article's extension point: override it in a subclass to react to
//: every change. StateKit calls it once per change, in version order, never concurrently.
final class LoggedState<Value>: State<Value>, @unchecked Sendable {
    override func didModify() {
        print("State for key \(key) modified, version \(version).")
        super.didModify()
    }
}

let rating = LoggedState(0, key: "rating")
rating ~> 5  // State for key rating modified, version 1.
rating.modify { $0 += 1 }  // State for key rating modified, version 2.
