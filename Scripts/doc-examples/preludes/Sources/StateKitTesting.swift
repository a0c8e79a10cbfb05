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

// The sink, test server and storage that the contract checks' examples check.
import Foundation

struct WebhookSink: StateSink {
    let url: URL
    func send(_ changes: [StateChange<Int>]) async throws {}
}
final class FakeWebhookServer: Sendable {
    let url = URL(string: "http://127.0.0.1:8080/hook")!
    static func start() async throws -> FakeWebhookServer { FakeWebhookServer() }
    var receivedValues: [Int] { [] }
}
final class KeychainStorage: StateStorage, @unchecked Sendable {
    let service: String
    init(service: String) { self.service = service }
    var location: String { "keychain:\(service)" }
    func load(forKey key: String) throws -> Data? { nil }
    func save(_ data: Data, forKey key: String) throws {}
    func remove(forKey key: String) throws {}
}
