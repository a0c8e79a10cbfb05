// Hidden setup for the examples of Sinks.md (see Scripts/check-doc-examples.sh).
import Foundation
