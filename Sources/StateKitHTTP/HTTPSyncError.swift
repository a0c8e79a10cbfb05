import Foundation
import StateKit

/// An HTTP answer that was neither a success nor a resolved conflict.
public struct HTTPSyncError: StateSinkError, CustomStringConvertible {
    /// The response's status code.
    public let statusCode: Int
    /// The response body.
    public let body: Data
    /// The wait the server asked for with `Retry-After`, if any.
    public let retryAfter: Duration?
    /// Whether the request may succeed later: `true` for 429 and 5xx.
    public let isRetryable: Bool
    /// What went wrong beyond the status code, such as a refused redirect or unresolved conflict.
    public let reason: String?

    /// Creates an error for an answer with `statusCode`.
    public init(statusCode: Int, body: Data, retryAfter: Duration?, isRetryable: Bool, reason: String? = nil) {
        self.statusCode = statusCode
        self.body = body
        self.retryAfter = retryAfter
        self.isRetryable = isRetryable
        self.reason = reason
    }

    /// `"HTTP 503 (retryable)"`, with the reason and the body's first 200 characters.
    public var description: String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return "HTTP \(statusCode) (\(isRetryable ? "retryable" : "not retryable"))"
            + (reason.map { ", \($0)" } ?? "") + (text.isEmpty ? "" : ": \(text)")
    }
}

/// A change a server refused as stale (409 Conflict or 412 Precondition Failed).
public struct HTTPSyncConflict<Value: Sendable>: Sendable {
    /// The change that was refused.
    public let change: StateChange<Value>
    /// 409 or 412.
    public let statusCode: Int
    /// The response body, often the server's current version of the resource.
    public let body: Data
}

extension StateDiagnostic.Kind {
    /// A remote-sync sink could not resolve a conflict with the server within its bounded number
    /// of rounds (each round: the write refused, the server's value fetched, the policy applied).
    public static let syncConflictUnresolved = StateDiagnostic.Kind("sync-conflict-unresolved")
}
