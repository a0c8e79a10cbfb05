import Foundation

/// A container's value as the page shows it: JSON where the value is `Encodable`, its description
/// otherwise, cut to ``limit`` characters.
struct RenderedValue: Equatable {
    /// The most characters of a value a page is sent.
    static let limit = 8_192

    let text: String
    let isJSON: Bool

    init(_ value: Any) {
        if let encodable = value as? any Encodable, let json = Self.json(encodable) {
            text = Self.cut(json)
            isJSON = true
        } else {
            text = Self.cut(String(describing: value))
            isJSON = false
        }
    }

    private static func json(_ value: any Encodable) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(value) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private static func cut(_ text: String) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}
