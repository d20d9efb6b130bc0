"""Static analyses, as LibCST metadata providers: activity (names read and
modified), liveness and definedness. Converters declare them in
``METADATA_DEPENDENCIES`` and read them with ``get_metadata``."""
from transpiler.analysis.activity import Activity, ActivityProvider, activity_of, declared_names
from transpiler.analysis.definedness import DefinednessProvider
from transpiler.analysis.liveness import Liveness, LivenessProvider

__all__ = ["Activity", "ActivityProvider", "activity_of", "declared_names",
           "DefinednessProvider", "Liveness", "LivenessProvider"]
