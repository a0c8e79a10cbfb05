// Hidden setup for the examples of Syncing.md: the names they assume.
import Foundation

let eventsURL = URL.temporaryDirectory.appending(path: "events-\(UUID().uuidString).jsonl")
