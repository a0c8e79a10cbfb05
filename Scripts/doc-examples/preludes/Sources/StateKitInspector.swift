// Hidden setup for the ```swift examples of the `///` comments in Sources/StateKitInspector
// (checked with `Scripts/check-doc-examples.sh --with-symbol-comments`).
import Foundation
import StateKitInspector
