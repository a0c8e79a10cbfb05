//: # SyncedState and sinks
//:
//: "You could even trigger synchronization with a remote server, or log metrics to an Analytics
//: library all by just using a different subclass." `SyncedState` is that subclass: it forwards
//: every change to its sinks, each with its own ordered buffer and delivery task, so a slow or
//: failing sink never holds back the writer or another sink.
import Foundation
import StateKit

//: A sink of your own needs one method: an ordered batch of changes.
struct PrintingSink: StateSink {
    func send(_ changes: [StateChange<String>]) async throws {
        for change in changes {
            print("  sent \(change.idempotencyKey): \(change.oldValue) -> \(change.newValue)")
        }
    }
}

//: Shipped sinks: a closure, structured log lines, analytics events.
let events = FileManager.default.temporaryDirectory.appendingPathComponent("statekit-events-\(UUID()).jsonl")
let plan = SyncedState("free", key: "plan") {
    PrintingSink()
    AnalyticsSink(backend: JSONLinesAnalyticsBackend(fileURL: events)) { change in
        AnalyticsEvent(name: "plan_changed", properties: ["from": change.oldValue, "to": change.newValue])
    }
}

plan ~> "trial"
plan ~> "pro"  // each write returns at once

//: `flush()` returns once every sink has every change made before it (or gave it up per policy).
let flushed = DispatchSemaphore(value: 0)
Task.detached {
    await plan.flush()
    flushed.signal()
}
flushed.wait()
print("statistics:", plan.statistics)
print("analytics lines:", (try? String(contentsOf: events, encoding: .utf8))?.split(separator: "\n").count ?? 0)
try? FileManager.default.removeItem(at: events)
