import Foundation
import StateKit

/// A live view of every container in the process, served as one web page on the loopback
/// interface: keys, values, versions, subscribers, storage and sync status, a change log that
/// updates as changes happen, and undo and redo for containers a ``StateKit/StateHistory`` tracks.
///
/// ```swift
/// import StateKit
/// import StateKitInspector
///
/// let count = MonitoredState(0, key: "count")
/// let inspector = try StateInspector.start()
/// print("Inspect the state at", inspector.url)
/// count.modify { $0 += 1 }
/// inspector.stop()
/// ```
///
/// The inspector sees every container alive while it runs, including those created before it
/// started. Every request needs the random token in ``url`` (others get 403), and undo and redo
/// are accepted only as `POST`. It listens on `127.0.0.1` unless the app names another address.
///
/// While no page is open, writes cost what they cost without an inspector. While one is, each
/// container counts the origins of its changes (see the Getting Started article for the measured
/// cost) and a thread of the inspector reads the containers that changed, 20 times a second.
/// Each page has a bounded buffer of changes: a page that falls behind is told it missed some and
/// starts again from the newest state; writers never wait for it.
///
/// The inspector stops when ``stop()`` is called or when it is released.
///
/// - Note: All operations on `StateInspector` are thread-safe.
public final class StateInspector: Sendable {
    /// The page's address, with the token every request must carry, such as
    /// `http://127.0.0.1:52000/?token=3f9a…`.
    public let url: URL
    /// The port the inspector listens on: the one asked for, or the one the system chose.
    public let port: UInt16
    /// The server.
    let server: InspectorServer

    private init(server: InspectorServer, host: String) {
        self.server = server
        self.port = server.port
        self.url = URL(string: "http://\(host):\(server.port)/?token=\(server.token)")!
    }

    /// Starts an inspector listening on `address` and `port`.
    ///
    /// ```swift
    /// let inspector = try StateInspector.start(port: 0)
    /// print(inspector.url.absoluteString.hasPrefix("http://127.0.0.1:"))  // true
    /// inspector.stop()
    /// ```
    ///
    /// - Parameters:
    ///   - port: The port to listen on; `0` (the default) lets the system choose a free one.
    ///   - address: The IPv4 address to listen on; the default, `127.0.0.1`, accepts connections
    ///     from this machine only. Pass another (such as `0.0.0.0`) only on a network you trust:
    ///     the token is then all that protects the app's state.
    /// - Returns: The running inspector; ``url`` is the page's address.
    /// - Throws: ``StateInspectorError`` when the address is not an IPv4 address or the port
    ///   cannot be listened on (taken, or not allowed).
    public static func start(port: UInt16 = 0, address: String = "127.0.0.1") throws -> StateInspector {
        let server = try InspectorServer(address: address, port: port)
        server.run()
        return StateInspector(server: server, host: address == "0.0.0.0" ? "127.0.0.1" : address)
    }

    /// Stops listening, closes every open page's connection and frees the port; returns once
    /// the port is free. Calling it again does nothing.
    public func stop() {
        server.stop()
    }

    deinit {
        server.stop()
    }
}
