// Hidden setup for the ```swift examples of the `///` comments in Sources/StateKit (checked with
// `Scripts/check-doc-examples.sh --with-symbol-comments`): the names those fragments assume.
import Foundation
import StateKitHTTP

struct User: Equatable, Sendable {
    var name = "Ann"
    var visits = 0
    var tags: Set<String> = []
}
struct AppModel: Equatable, Sendable {
    var user = User()
    var theme = "light"
}
let app = MonitoredState(AppModel(), key: "app")
let counter = MonitoredState(0, key: "counter")
let count = MonitoredState(0, key: "count")
let appRating = State<Int?>(nil, key: "appRating")

struct Item: Identifiable, Equatable, Sendable {
    var id: Int
    var title: String
    var quantity = 1
}
struct Cart: Codable, Equatable, Sendable {
    var items: [Item] = []
}
extension Item: Codable {}
let item = Item(id: 2, title: "Pen")
let book = Item(id: 1, title: "Book")
let cart = SyncedState(Cart(items: [book]), key: "cart", sinks: [LoggingSink()])

struct Todo: Equatable, Sendable { var title: String }
let todos = MonitoredState([Todo](), key: "todos")

final class Person: @unchecked Sendable {
    var name = "Steve Jobs"
}
let currentCEO = State(Person(), key: "currentCEO")

enum PlayerState: Equatable, Sendable {
    case idle, playing, finished
    func canMove(to next: PlayerState) -> Bool { next != .idle }
}
struct InvalidTransition: Error {
    var from: PlayerState
    var to: PlayerState
}

enum Theme: String, Codable, Sendable { case light, dark }
struct Settings: Codable, Equatable, Sendable {
    var theme = Theme.light
}
struct SettingsV1: Decodable { var theme: Theme }
struct Profile: Codable, Equatable, Sendable { var name = "" }
struct Onboarding: Codable, Equatable, Sendable { var isDone = false }
struct Order: Codable, Equatable, Sendable { var lines: [String] = [] }

let settings = MonitoredState(Settings(), key: "settings")
let systemTheme = MonitoredState(Theme.dark, key: "systemTheme")
let directory = URL.temporaryDirectory.appending(path: "statekit-doc-examples")
let settingsDirectory = directory
let supportDirectory = directory
let sharedDirectory = directory
let appGroupDirectory = directory
let eventsURL = directory.appending(path: "events.jsonl")
let url = URL(string: "https://api.example.com/state")!
let profileURL = URL(string: "https://api.example.com/profile")!
let cartURL = URL(string: "https://api.example.com/cart")!
let token = "secret"
let verbose = false
let profile = SyncedState(Profile(), key: "profile") {
    HTTPSyncSink(endpoint: profileURL, loadsOnStart: false)
}

struct Logger: Sendable {
    func warning(_ message: String) {}
}
let logger = Logger()

final class LocationViewController: @unchecked Sendable {
    func updateMapForCurrentLocation() {}
}
let viewController = LocationViewController()
let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")

enum MyVendor {
    static func track(_ name: String, properties: [String: String]) {}
}
struct API: Sendable {
    func record(_ values: [Int]) async throws {}
}
let api = API()
let backend = JSONLinesAnalyticsBackend(fileURL: eventsURL)
struct Habit: Codable, Equatable, Sendable { var name = "" }
extension StateKeys { static let habitList = StateKey("habit-list", default: [Habit](), storage: .file(directory)) }
