"""Design edits: every edit takes a `Design` and returns a new one (pure, no Streamlit).

The Designer page wires its widgets to these functions and the CLI calls them too
(`python -m core edit --design IN --out OUT --tensor-shape x=8,4`), so the design file stays what
the editor edits and the CLI takes:

    from core.sharding import edits
    design = edits.set_tensor_shape(design, "x", edits.parse_shape("8, 4"))
    design, name = edits.add_operator(design, "MatMul", ["x", "w"])

Edits never raise on a design that is merely invalid while the user works (a size that does not
divide, a product that does not match the device count): `design_problems` and the operator analysis
say what is wrong. They raise `EditError` only for input that cannot be stored at all (a name that is
not an identifier, a shape that is not numbers, a name that does not exist), with a message to show
as is. One module per part of the design: `layouts`, `tensors`, `operators`, `settings`, `files`;
`text` parses typed values, `entries` is the map algebra, `lookup` finds and replaces pieces.
"""

from core.sharding.edits.entries import (
    assign_axes,
    axes_entry,
    entry_axes,
    fit_map,
    rename_in_entries,
    strip_aliases,
)
from core.sharding.edits.files import (
    DEFAULT_EXAMPLE,
    default_design,
    design_file_name,
    list_designs,
    load_from_folder,
    save_to_folder,
)
from core.sharding.edits.layouts import (
    PRESETS,
    Preset,
    add_axis,
    add_layout,
    apply_preset,
    interleave_of,
    move_axis,
    remove_axis,
    remove_layout,
    rename_axis,
    rename_layout,
    set_axis_size,
    set_interleave,
    set_rank_list,
)
from core.sharding.edits.lookup import operator_index, operator_of, replace_operator
from core.sharding.edits.operators import (
    add_operator,
    enable_operator_strategy,
    input_ndims,
    input_shapes,
    op_sources,
    output_ndim,
    remove_operator,
    set_operator_axis,
    set_operator_dim_axes,
    set_operator_eps,
    set_operator_input,
    set_operator_input_mode,
    set_operator_map,
    set_operator_out_dim_axes,
    set_operator_out_map,
    set_operator_out_strategy,
    set_operator_perm,
    set_operator_shape,
    set_operator_split_text,
    set_operator_strategy,
    set_operator_transpose,
    source_ndim,
    source_shape,
)
from core.sharding.edits.settings import set_description, set_device_num, set_loss, set_name, set_repeat
from core.sharding.edits.tensors import (
    add_tensor,
    remove_tensor,
    rename_tensor,
    set_dim_axes,
    set_tensor_dtype,
    set_tensor_layout,
    set_tensor_map,
    set_tensor_role,
    set_tensor_shape,
    set_tensor_split,
)
from core.sharding.edits.text import (
    EditError,
    check_identifier,
    format_ints,
    parse_int_list,
    parse_rank_list,
    parse_shape,
    parse_split,
)

__all__ = [
    "DEFAULT_EXAMPLE",
    "PRESETS",
    "EditError",
    "Preset",
    "add_axis",
    "add_layout",
    "add_operator",
    "add_tensor",
    "apply_preset",
    "assign_axes",
    "axes_entry",
    "check_identifier",
    "default_design",
    "design_file_name",
    "enable_operator_strategy",
    "entry_axes",
    "fit_map",
    "format_ints",
    "input_ndims",
    "input_shapes",
    "interleave_of",
    "list_designs",
    "load_from_folder",
    "move_axis",
    "op_sources",
    "operator_index",
    "operator_of",
    "output_ndim",
    "parse_int_list",
    "parse_rank_list",
    "parse_shape",
    "parse_split",
    "remove_axis",
    "remove_layout",
    "remove_operator",
    "remove_tensor",
    "rename_axis",
    "rename_in_entries",
    "rename_layout",
    "rename_tensor",
    "replace_operator",
    "save_to_folder",
    "set_axis_size",
    "set_description",
    "set_device_num",
    "set_dim_axes",
    "set_interleave",
    "set_loss",
    "set_name",
    "set_operator_axis",
    "set_operator_dim_axes",
    "set_operator_eps",
    "set_operator_input",
    "set_operator_input_mode",
    "set_operator_map",
    "set_operator_out_dim_axes",
    "set_operator_out_map",
    "set_operator_out_strategy",
    "set_operator_perm",
    "set_operator_shape",
    "set_operator_split_text",
    "set_operator_strategy",
    "set_operator_transpose",
    "set_rank_list",
    "set_repeat",
    "set_tensor_dtype",
    "set_tensor_layout",
    "set_tensor_map",
    "set_tensor_role",
    "set_tensor_shape",
    "set_tensor_split",
    "source_ndim",
    "source_shape",
    "strip_aliases",
]
