// Hidden setup for the examples of ImplementingAStateSink.md (see Scripts/check-doc-examples.sh).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

actor Mirror {
    func store(_ value: String) async throws {}
}
let mirror = Mirror()
