import Foundation

/// The longest ``shortErrorMessage(_:)`` returns, in characters.
let shortErrorMessageLimit = 120

/// One line of at most ``shortErrorMessageLimit`` characters saying what `error` is, for
/// ``SinkStatistics/lastError`` and ``SyncStatus/lastError``.
///
/// Foundation's errors (`URLError`, `NSError`, `CocoaError`) describe themselves as a dump of
/// their user info, hundreds of characters on Linux; they become their domain (or `URLError`),
/// code and localized description instead: "URLError -1004: Could not connect to the server".
/// Other errors give the first line of their description.
func shortErrorMessage(_ error: any Error) -> String {
    let message: String
    if error is any CustomNSError || type(of: error) is NSError.Type {
        let error = error as NSError
        // The domain's name, so StateKit need not import FoundationNetworking for it on Linux.
        let prefix = error.domain == "NSURLErrorDomain" ? "URLError" : error.domain
        let reason = error.userInfo[NSLocalizedDescriptionKey] as? String ?? error.localizedDescription
        message = "\(prefix) \(error.code): \(reason)"
    } else {
        message = String(describing: error)
    }
    let line = message.prefix { !$0.isNewline }.trimmingCharacters(in: .whitespaces)
    guard line.count > shortErrorMessageLimit else { return line }
    return line.prefix(shortErrorMessageLimit - 1) + "…"
}
