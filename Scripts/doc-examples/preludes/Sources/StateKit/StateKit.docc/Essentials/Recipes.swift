// Hidden setup for the examples of Recipes.md (see Scripts/check-doc-examples.sh).
import Foundation
func search(_ text: String) async {}
let appGroupDirectory = URL.temporaryDirectory.appending(path: "statekit-doc-examples-group")
