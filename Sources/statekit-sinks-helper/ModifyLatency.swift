import Dispatch
import StateKit

/// Measures how long `modify` takes the writer, with and without a slow sink attached.
enum ModifyLatency {
    /// A sink that takes 200 ms per batch.
    struct SlowSink: StateSink {
        let policy: SinkPolicy

        func send(_ changes: [StateChange<Int>]) async throws {
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    static func run(writes: Int) async {
        var cases: [(String, MonitoredState<Int>)] = [
            ("MonitoredState, no subscriber", MonitoredState(0, key: "plain")),
            ("SyncedState, no sink", SyncedState(0, key: "none", sinks: [])),
            (
                "SyncedState, 200 ms sink, buffer 1,000,000",
                SyncedState(0, key: "slow", sinks: [SlowSink(policy: SinkPolicy(bufferLimit: 1_000_000))])
            ),
            (
                "SyncedState, 200 ms sink, default policy (drops past 10,000)",
                SyncedState(0, key: "slow-default", sinks: [SlowSink(policy: .default)])
            ),
        ]
        let withChangeSubscriber = MonitoredState(0, key: "subscribed")
        let subscription = withChangeSubscriber.subscribeChanges { _ in }
        defer { subscription.cancel() }
        cases.insert(("MonitoredState, one no-op subscribeChanges handler", withChangeSubscriber), at: 1)
        StateDiagnostics.handler = { _ in }
        print("modify { $0 += 1 } latency, \(writes) writes on one thread")
        for (name, state) in cases {
            for _ in 0..<1_000 { state.modify { $0 += 1 } }
            var samples: [UInt64] = []
            samples.reserveCapacity(writes)
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<writes {
                let before = DispatchTime.now().uptimeNanoseconds
                state.modify { $0 += 1 }
                samples.append(DispatchTime.now().uptimeNanoseconds - before)
            }
            let total = DispatchTime.now().uptimeNanoseconds - start
            samples.sort()
            let mean = Double(total) / Double(writes)
            func percentile(_ fraction: Double) -> UInt64 {
                samples[min(samples.count - 1, Int(Double(samples.count) * fraction))]
            }
            print(
                "  \(name): mean \(Int(mean)) ns (incl. timer), p50 \(percentile(0.5)) ns, p99 \(percentile(0.99)) ns, "
                    + "max \(samples.last ?? 0) ns"
            )
        }
    }
}
