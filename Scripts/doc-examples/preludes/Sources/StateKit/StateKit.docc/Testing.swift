// Hidden setup for the examples of Testing.md (see Scripts/check-doc-examples.sh): the model the
// article's first block shows.
struct User: Equatable, Sendable { var name = "Ann" }
struct AppModel: Equatable, Sendable {
    var user = User()
    var theme = "light"
}
import StateKitTesting
import Testing
