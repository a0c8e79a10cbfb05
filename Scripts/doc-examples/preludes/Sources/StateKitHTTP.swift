// Hidden setup for the ```swift examples of the `///` comments in Sources/StateKitHTTP
// (checked with `Scripts/check-doc-examples.sh --with-symbol-comments`).
import Foundation
import StateKitHTTP

struct Profile: Codable, Equatable, Sendable { var name = "" }
struct Cart: Codable, Equatable, Sendable { var items: Set<String> = [] }
let cartURL = URL(string: "https://api.example.com/cart")!
let token = "secret"
