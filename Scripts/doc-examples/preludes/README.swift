// Hidden setup for the examples of README.md (see Scripts/check-doc-examples.sh): Foundation, the
// tour's model for the test example, and a file for the analytics example.
import Foundation

struct User: Equatable, Sendable { var name: String; var visits = 0 }
struct AppModel: Equatable, Sendable { var user = User(name: "Ann"); var theme = "light" }
let eventsURL = URL.temporaryDirectory.appending(path: "statekit-doc-examples-events.jsonl")
