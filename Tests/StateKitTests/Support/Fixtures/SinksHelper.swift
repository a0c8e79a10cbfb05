import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `statekit-sinks-helper` executable run as a child process (see its `main.swift` for the modes).
struct SinksHelper {
    let process: Process
    /// The first line the child printed.
    let firstLine: String
    let errors: Pipe
    let output: Pipe
    /// What the child printed after its first line, read with it.
    let readAhead: Data

    /// Runs the helper and returns once it printed its first line, leaving it running.
    static func launch(_ arguments: [String]) async throws -> SinksHelper {
        let (process, output, errors) = try TestHelperProcess.start(executable(), arguments)
        // A child that never prints its first line is killed after a minute, which ends the read.
        let watchdog = DispatchWorkItem { [process] in
            guard process.isRunning else { return }
            #if canImport(Glibc)
            _ = Glibc.kill(process.processIdentifier, SIGKILL)
            #else
            _ = Darwin.kill(process.processIdentifier, SIGKILL)
            #endif
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        defer { watchdog.cancel() }
        // Read on a thread of its own: a blocking read on a global queue's thread, one per child
        // running, starves the timers other tests and StateKit schedule there.
        let (line, readAhead) = await withCheckedContinuation { continuation in
            Thread {
                var data = Data()
                while !data.contains(0x0A) {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                let end = data.firstIndex(of: 0x0A) ?? data.endIndex
                let rest = end < data.endIndex ? data[data.index(after: end)...] : Data()
                continuation.resume(returning: (String(decoding: data[..<end], as: UTF8.self), Data(rest)))
            }.start()
        }
        return SinksHelper(
            process: process, firstLine: line.trimmingCharacters(in: .whitespacesAndNewlines), errors: errors,
            output: output, readAhead: readAhead)
    }

    /// Sends SIGKILL and waits for the child to be gone.
    func kill() async {
        #if canImport(Glibc)
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        #else
        _ = Darwin.kill(process.processIdentifier, SIGKILL)
        #endif
        await waitForExit()
    }

    /// Waits (bounded) for the child to exit and returns its exit status; a child still running
    /// then is killed, and `nil` returned (reading a running process's status stops the tests).
    func exitStatus(within seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async -> Int32? {
        await waitForExit(seconds: seconds, sourceLocation: sourceLocation)
        guard !process.isRunning else {
            await kill()
            return nil
        }
        return process.terminationStatus
    }

    func waitForExit(seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async {
        await bounded("the sinks helper to exit", seconds: seconds, sourceLocation: sourceLocation) { resumer in
            Thread {
                _ = hasExited(process, within: seconds)
                resumer.resume()
            }.start()
        }
    }

    /// The lines the child printed after its first one; call once it has exited.
    var laterLines: [String] {
        let data = readAhead + output.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// What the child wrote to standard error (diagnostics); call once it has exited.
    var diagnostics: String {
        String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// The helper, built next to the test bundle, or the copy named by `STATEKIT_SINKS_HELPER` (so a
    /// long measurement can run while the package is rebuilt).
    private static func executable() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["STATEKIT_SINKS_HELPER"] {
            return URL(fileURLWithPath: path)
        }
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, Bundle.main.bundleURL.deletingLastPathComponent()]
            .map { $0.appending(path: "statekit-sinks-helper") }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) })
    }
}
