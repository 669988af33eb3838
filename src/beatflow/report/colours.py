"""The report's colours, one definition for every figure: each AAMI beat class and each reason a beat is
flagged for."""

CLASS_COLOURS = {"N": "#222222", "S": "#e07000", "V": "#dc143c", "F": "#8e44ad", "Q": "#7f7f7f"}
REASON_COLOURS = {"morphology": "#c2185b", "rhythm": "#1565c0"}
