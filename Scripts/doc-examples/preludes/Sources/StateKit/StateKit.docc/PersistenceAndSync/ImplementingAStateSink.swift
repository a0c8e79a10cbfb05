// Hidden setup for the examples of ImplementingAStateSink.md (see Scripts/check-doc-examples.sh).
import Foundation

actor Mirror {
    func store(_ value: String) async throws {}
}
let mirror = Mirror()

// "Testing a sink": the sink of the article's first example, and a test server.
import StateKitTesting

struct WebhookSink: StateSink {
    let url: URL
    func send(_ changes: [StateChange<Int>]) async throws {}
}
final class FakeWebhookServer: Sendable {
    let url = URL(string: "http://127.0.0.1:8080/hook")!
    var receivedValues: [Int] { [] }
}
let server = FakeWebhookServer()
