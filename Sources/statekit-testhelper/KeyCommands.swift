import Foundation
import StateKit

// The commands for keys declared once (StateKey), as an app's extension uses them:
//
//   key-increment <directory> <key> <count> [in-memory]
//       declares the key (an Int, default 0) in `FileStateStorage.file(directory,
//       sharedAcrossProcesses: true)`, opens it through `@Persisted` and `PersistedState`, prints
//       "ready", waits for a line on standard input, adds 1 <count> times (through each by
//       turns), prints "done <value>". With `in-memory`, all of it runs inside
//       `withStateStorage(InMemoryStateStorage())`, as a preview or a test would.

/// A model that declares its property with a key, as an app's widget would.
final class CounterModel {
    @Persisted var count: Int

    init(_ key: StateKey<Int>) {
        _count = Persisted(key)
    }
}

/// Runs a `key-…` command; `false` if `arguments` is not one.
func runKeyCommand(_ arguments: [String]) -> Bool {
    guard arguments[0] == "key-increment", arguments.count >= 4, let count = Int(arguments[3]) else { return false }
    let directory = URL(fileURLWithPath: arguments[1], isDirectory: true)
    let key = StateKey(arguments[2], default: 0, storage: .file(directory, sharedAcrossProcesses: true))
    let run = {
        let model = CounterModel(key)
        let counter = PersistedState(key)
        line("ready")
        _ = readLine()
        for index in 0..<count {
            if index.isMultiple(of: 2) {
                model.$count.modify { $0 += 1 }
            } else {
                counter.modify { $0 += 1 }
            }
        }
        counter.flush()
        line("done \(counter.value)")
    }
    if arguments.count == 5, arguments[4] == "in-memory" {
        withStateStorage(InMemoryStateStorage(), operation: run)
    } else {
        run()
    }
    return true
}
