// Hidden setup for the examples of Testing.md (see Scripts/check-doc-examples.sh): the model the
// article's first block shows.
struct User: Equatable, Sendable { var name = "Ann" }
struct AppModel: Equatable, Sendable {
    var user = User()
    var theme = "light"
}
import StateKitTesting
import Testing
import Foundation

// The sink, test server and storage that "Checking your own sink or storage" checks.
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
