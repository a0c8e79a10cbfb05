//: # Key-path subscription
//:
//: `state.observe(\.user.name)`, or just `state.user.name`, is an `Observed` projection: a live
//: view of one part, which notifies only when that part changes.
import StateKit

struct User: Equatable, Sendable {
    var name: String
    var visits: Int
}

struct AppModel: Equatable, Sendable {
    var user = User(name: "Ann", visits: 0)
    var theme = "light"
}

let app = MonitoredState(AppModel(), key: "app")

let names = app.user.name.subscribe { print("name: \($0)") }  // name: Ann
app.user.visits ~> { $0 += 1 }  // another part: nothing printed
app.theme ~> "dark"  // nothing printed
app.user.name ~> "Ann"  // equal: nothing printed
app.user.name ~> "Tim"  // name: Tim

//: Each write through a projection is one change of the root, with one new version.
print(app.version)  // 3

//: Projections compose, and their values arrive as an `AsyncSequence` too.
let user = app.user
print(user.name.value)  // Tim
for await name in user.name.values {
    print("first value from the sequence: \(name)")
    break
}

//: `<~` binds a target to a source until the returned subscription goes away.
let displayName = MonitoredState("", key: "displayName")
let binding = displayName <~ app.user.name
app.user.name ~> "Eve"
print(displayName.value)  // Eve

//: `@Stateful` turns a property into a container: `$count` is the `MonitoredState`.
final class CounterModel {
    @Stateful(key: "counter") var count = 0
}

let model = CounterModel()
let counts = model.$count.subscribe { print("count: \($0)") }  // count: 0
model.count = 1  // count: 1
model.$count.modify { $0 += 1 }  // count: 2
