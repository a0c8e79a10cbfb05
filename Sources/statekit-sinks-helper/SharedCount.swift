import Foundation
import StateKit
import StateKitHTTP

/// `sync-shared-count`: adds 1 `count` times to an Int persisted in `directory`, shared across
/// processes, and synced to `url`; every conflict the server reports is printed to standard error.
/// Returns the container, which the caller keeps until it is killed: while it lives, this process
/// may be the key's sender, which sends the other processes' changes too.
func countShared(directory: URL, key: String, url: URL, count: Int, authorization: String?) async
    -> SyncedState<Int>
{
    let sink = HTTPSyncSink<Int>(
        endpoint: url, timeout: .seconds(10),
        conflictPolicy: .merge { base, local, remote in
            FileHandle.standardError.write(
                Data("conflict base \(base.map(String.init) ?? "-") local \(local) remote \(remote)\n".utf8))
            return max(local, remote)
        }
    ) { request in
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
    }
    let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
    let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
    _ = await state.flush(timeout: .seconds(20))
    FileHandle.standardOutput.write(Data("ready \(state.value)\n".utf8))
    let go = directory.appending(path: "go").path
    while !FileManager.default.fileExists(atPath: go) { usleep(1_000) }
    for _ in 0..<count {
        state.modify { $0 += 1 }
        usleep(1_000)
    }
    _ = await state.flush(timeout: .seconds(20))
    return state
}
