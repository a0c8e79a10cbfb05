// Hidden setup for the ```swift examples of the `///` comments in Sources/StateKitTesting
// (checked with `Scripts/check-doc-examples.sh --with-symbol-comments`).
import Dispatch
import StateKitTesting
import Testing

struct User: Equatable, Sendable { var name = "Ann"; var age = 0 }
struct AppModel: Equatable, Sendable { var user = User() }
let app = MonitoredState(AppModel(), key: "app")
let counter = MonitoredState(0, key: "counter")

final class Seen: @unchecked Sendable {
    var all: [Int] = []
    func append(_ value: Int) { all.append(value) }
}
let seen = Seen()
