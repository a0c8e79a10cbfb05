// Hidden setup for the examples of Persistence.md (see Scripts/check-doc-examples.sh).
import Foundation

let directory = URL.temporaryDirectory.appending(path: "statekit-doc-examples")
let settingsDirectory = directory
enum Theme: String, Codable, Sendable { case light, dark }
struct Profile: Codable, Equatable, Sendable { var name = "" }
struct SettingsV1: Decodable { var theme: String }
let appGroupDirectory = URL.temporaryDirectory.appending(path: "statekit-doc-examples-group")
